package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// decodeYAML decodes strictly with yaml.v3 and rewrites its messages
// ("line 7: field opne_for not found in type config.Policy") as problems
// named by field path.
func decodeYAML(data []byte) decoded {
	d := decoded{file: &File{}}
	// Parse once into nodes: to refuse huge mappings before yaml.v3's
	// quadratic duplicate check, and to map its line-numbered messages to
	// field paths.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		d.fatal = true
		d.problems = []Problem{yamlSyntax(err)}
		return d
	}
	if root.Kind == 0 || (root.Kind == yaml.DocumentNode && len(root.Content) == 0) {
		d.fatal = true
		d.problems = []Problem{{Message: "the file is empty"}}
		return d
	}
	x := yamlIndex{pos: positions{}, keys: map[int][]yamlEntry{}, vals: map[int][]yamlEntry{}}
	x.walk(&root, "")
	d.pos = x.pos
	if x.tooBig != nil {
		d.fatal = true
		d.problems = []Problem{*x.tooBig}
		return d
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		x.types = map[*yaml.Node]reflect.Type{}
		x.seen = map[yamlVisit]bool{}
		x.check(root.Content[0], reflect.TypeFor[File](), "")
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(d.file); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			d.fatal = true
			d.problems = []Problem{yamlSyntax(err)}
			return d
		}
		for _, msg := range te.Errors {
			p, scope, hides := x.problem(msg)
			d.problems = append(d.problems, p)
			if hides {
				d.scopes = append(d.scopes, scope)
			}
		}
	}
	// The values yaml.v3 took but JSON would refuse: problems like its own,
	// in file order among them.
	d.problems = append(d.problems, x.strict...)
	for _, p := range x.strict {
		d.scopes = append(d.scopes, p.Path)
	}
	slices.SortStableFunc(d.problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.problems = append(d.problems, yamlSyntax(err))
	case !emptyDocument(&extra):
		d.problems = append(d.problems, Problem{Line: extra.Line, Message: "a second YAML document (after ---); put the whole configuration in one document"})
	}
	return d
}

// emptyDocument reports whether n is a document with no content (a trailing
// "---").
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

var reYAMLSyntax = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

func yamlSyntax(err error) Problem {
	if m := reYAMLSyntax.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Message: "invalid YAML: " + shortenQuoted(m[2])}
	}
	return Problem{Message: "invalid YAML: " + shortenQuoted(strings.TrimPrefix(err.Error(), "yaml: "))}
}

// reYAMLQuoted finds what yaml.v3's messages quote from the file: a value
// (cannot decode !!str `…` as a !!int) or an alias (unknown anchor '…').
var reYAMLQuoted = regexp.MustCompile("`[^`]*`|'[^']*'")

// shortenQuoted cuts what a yaml.v3 message quotes from the file to its
// first characters, as refused does: it may be a secret written where a
// number was due (db: !!int hunter2), or a password that YAML read as an
// alias (db: *hunter2).
func shortenQuoted(msg string) string {
	return reYAMLQuoted.ReplaceAllStringFunc(msg, func(q string) string {
		open, in := q[:1], q[1:len(q)-1]
		if utf8.RuneCountInString(in) <= shownWhole {
			return q
		}
		return open + string([]rune(in)[:shownPrefix]) + "…" + open
	})
}

// yamlEntry is a node and the field path it is written at.
type yamlEntry struct {
	node *yaml.Node
	path string
}

// yamlIndex maps lines to the keys and values written on them.
type yamlIndex struct {
	pos    positions
	keys   map[int][]yamlEntry // mapping keys, by line; path is the key's field
	vals   map[int][]yamlEntry // values, by line
	tooBig *Problem

	// Set by check.
	types  map[*yaml.Node]reflect.Type // the Go type each value is decoded into
	seen   map[yamlVisit]bool
	strict []Problem // values yaml.v3 decodes that do not have their field's type
}

// yamlVisit is a value checked against a type: an alias of it is not
// checked again (so that aliases of aliases cost what the nodes cost).
type yamlVisit struct {
	node *yaml.Node
	t    reflect.Type
}

// check walks n, the value of the field at path, against t, the Go type it
// is decoded into, and reports (in x.strict) every value that yaml.v3
// decodes although it does not have that type — where JSON, whose walker
// refuses them (decodeJSON), and yaml.v3 itself for other kinds, give an
// error:
//
//   - a number with a fraction or an exponent (0.9, 2.5, -1.5, 1e3, 1.0,
//     !!float 3) in an integer field: yaml.v3 truncates it (0.9 becomes 0);
//   - .inf, -.inf or .nan in a number field: JSON has no such numbers, and
//     no range check refuses a NaN;
//   - an integer, number, boolean, timestamp, binary or custom-tagged value
//     in a string field: yaml.v3 takes its text (or decodes the base64 of
//     !!binary); write it in quotes;
//   - y, yes, on, n, no, off (in any case yaml.v3 knows) in a boolean field:
//     strings in YAML 1.2 that yaml.v3 reads as booleans for YAML 1.1.
//
// Kinds yaml.v3 refuses itself (a string in an integer field, a list where
// a mapping is due) are left to its messages, and durations to
// Duration.UnmarshalYAML. It also records each value's Go type, so that
// yaml.v3's messages, which name the type but not the field, find their
// field when several values share a line.
func (x *yamlIndex) check(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	v := yamlVisit{n, t}
	if x.seen[v] {
		return
	}
	x.seen[v] = true
	if _, ok := x.types[n]; !ok {
		x.types[n] = t
	}
	if t == durationType {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				// "<<: *base" or "<<: [*a, *b]": the merged mappings'
				// keys are this mapping's.
				if val.Kind == yaml.SequenceNode {
					for _, m := range val.Content {
						x.check(m, t, path)
					}
				} else {
					x.check(val, t, path)
				}
				continue
			}
			vt := t.Elem
			if t.Kind() == reflect.Struct {
				ft := fieldType(t, k.Value)
				if ft == nil {
					continue // an unknown field: yaml.v3 reports it
				}
				vt = func() reflect.Type { return ft }
			}
			x.check(val, vt(), join(path, seg(k.Value)))
		}
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice {
			return
		}
		for i, c := range n.Content {
			x.check(c, t.Elem(), index(path, i))
		}
	case yaml.ScalarNode:
		if msg := laxScalar(n, t); msg != "" {
			x.strict = append(x.strict, Problem{Path: path, Line: n.Line, Column: n.Column, Message: msg})
		}
	}
}

// laxScalar returns the problem with n, a scalar that yaml.v3 decodes into
// a value of type t although it does not have that type, or "".
func laxScalar(n *yaml.Node, t reflect.Type) string {
	tag := n.ShortTag()
	if tag == "!!null" {
		return "" // leaves the field unset, as JSON's null does
	}
	got := func(note string) string {
		return "want " + want(t) + ", got " + gotYAML(tag, n.Value) + note
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		if tag != "!!float" {
			return ""
		}
		var f float64
		if n.Decode(&f) != nil || !(f <= math.MaxInt64) || reflect.New(t).Elem().OverflowInt(int64(f)) {
			return "" // out of range: yaml.v3 refuses it
		}
		return got("")
	case reflect.Float64:
		var f float64
		if (tag == "!!float" || tag == "!!int") && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return got(" (not a finite number)")
		}
	case reflect.String:
		if tag != "!!str" {
			return got(" (write it in quotes)")
		}
	case reflect.Bool:
		if tag == "!!str" {
			switch n.Value {
			case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
				return got(" (write true or false)")
			}
		}
	}
	return ""
}

func (x *yamlIndex) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			x.vals[c.Line] = append(x.vals[c.Line], yamlEntry{c, path}) // the top-level value
			x.walk(c, path)
		}
	case yaml.MappingNode:
		if len(n.Content)/2 > maxMappingKeys && x.tooBig == nil {
			x.tooBig = &Problem{Path: path, Line: n.Line, Message: fmt.Sprintf("more than %d keys in one mapping", maxMappingKeys)}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				continue // "<<: *anchor": the merged keys are indexed where they are written
			}
			cp := join(path, seg(k.Value))
			x.keys[k.Line] = append(x.keys[k.Line], yamlEntry{k, cp})
			x.vals[v.Line] = append(x.vals[v.Line], yamlEntry{v, cp})
			if _, ok := x.pos[cp]; !ok {
				x.pos[cp] = [2]int{k.Line, k.Column}
			}
			x.walk(v, cp)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ip := index(path, i)
			x.vals[c.Line] = append(x.vals[c.Line], yamlEntry{c, ip})
			if _, ok := x.pos[ip]; !ok {
				x.pos[ip] = [2]int{c.Line, c.Column}
			}
			x.walk(c, ip)
		}
	}
}

var (
	reYAMLLine    = regexp.MustCompile(`(?s)^line (\d+)(?: column (\d+))?: (.*)$`)
	reYAMLUnknown = regexp.MustCompile(`(?s)^field (.*) not found in type (\S+)$`)
	reYAMLSet     = regexp.MustCompile(`(?s)^field (.*) already set in type (\S+)$`)
	reYAMLDupKey  = regexp.MustCompile(`(?s)^mapping key (".*") already defined at line (\d+)$`)
	reYAMLType    = regexp.MustCompile("(?s)^cannot unmarshal (\\S+?)(?: `(.*)`)? into (.+)$")
)

// problem rewrites one yaml.v3 type-error message. scope is the path whose
// value was not decoded; hides says whether validation problems under it are
// to be dropped.
func (x *yamlIndex) problem(msg string) (p Problem, scope string, hides bool) {
	m := reYAMLLine.FindStringSubmatch(msg)
	if m == nil {
		return Problem{Message: msg}, "", true
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	rest := m[3]
	p = Problem{Line: line, Message: rest}
	at := func(e yamlEntry) {
		p.Path, p.Column = e.path, e.node.Column
	}
	key := func(name string) bool {
		for _, e := range x.keys[line] {
			if e.node.Value == name {
				at(e)
				return true
			}
		}
		return false
	}
	switch {
	case reYAMLUnknown.MatchString(rest):
		sm := reYAMLUnknown.FindStringSubmatch(rest)
		key(sm[1])
		p.Message = unknownField(schemaTypes[sm[2]], sm[1])
		return p, "", false
	case reYAMLSet.MatchString(rest):
		sm := reYAMLSet.FindStringSubmatch(rest)
		key(sm[1])
		p.Message = fmt.Sprintf("field %q is set twice", sm[1])
		return p, parent(p.Path), true
	case reYAMLDupKey.MatchString(rest):
		sm := reYAMLDupKey.FindStringSubmatch(rest)
		name, err := strconv.Unquote(sm[1])
		if err != nil {
			name = sm[1]
		}
		key(name)
		p.Message = fmt.Sprintf("duplicate key %s (first at line %s)", quoteShort(name, 40), sm[2])
		// yaml.v3 leaves the whole mapping undecoded.
		return p, parent(p.Path), p.Path != ""
	case reYAMLType.MatchString(rest):
		sm := reYAMLType.FindStringSubmatch(rest)
		tag, val, into := sm[1], sm[2], sm[3]
		var best *yamlEntry
		// The value of the type yaml.v3 names, when check knows it: a
		// line may hold several values of one tag ("- {throttle: [1.2]}"
		// is a list in a list).
		for i, e := range x.vals[line] {
			if t, ok := x.types[e.node]; ok && t.String() == into && (e.node.ShortTag() == tag || e.node.Tag == tag) {
				best = &x.vals[line][i]
				break
			}
		}
		for i, e := range x.vals[line] {
			if best != nil {
				break
			}
			if e.node.ShortTag() != tag && e.node.Tag != tag {
				continue
			}
			if val == "" || e.node.Value == val ||
				(strings.HasSuffix(val, "...") && strings.HasPrefix(e.node.Value, strings.TrimSuffix(val, "..."))) {
				best = &x.vals[line][i]
				break
			}
		}
		if best == nil && len(x.vals[line]) > 0 {
			best = &x.vals[line][0]
		}
		if best != nil {
			at(*best)
			if val != "" && best.node.Kind == yaml.ScalarNode {
				val = best.node.Value // yaml.v3 cuts it at 7 bytes
			}
		}
		p.Message = "want " + wantYAML(into) + ", got " + gotYAML(tag, val)
		if (tag == "!!int" && (into == "int" || into == "float64")) || (tag == "!!float" && into == "float64") ||
			(tag == "!!float" && into == "int" && !strings.ContainsAny(val, ".eE")) {
			p.Message += " (out of range)" // the kind is right, the size is not
		}
		return p, p.Path, true
	}
	// Our own messages (Duration) carry a column.
	for _, e := range x.vals[line] {
		if col == 0 || e.node.Column == col {
			at(e)
			break
		}
	}
	return p, p.Path, true
}

// wantYAML describes a Go type from a yaml.v3 message.
func wantYAML(goType string) string {
	if t, ok := schemaTypes[goType]; ok {
		return want(t)
	}
	switch goType {
	case "int", "int64":
		return "an integer"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "[]string":
		return "a list of strings"
	}
	switch {
	case strings.HasPrefix(goType, "map["):
		return "a mapping of names to values"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	}
	return goType
}

// gotYAML describes a YAML value from its tag, repeating at most a few of
// its characters (refused).
func gotYAML(tag, val string) string {
	switch tag {
	case "!!map":
		return "a mapping"
	case "!!seq":
		return "a list"
	case "!!null":
		return "null"
	case "!!binary":
		return "binary data"
	case "!!bool":
		return "the boolean " + val
	case "!!str":
		return refused("string", val, true)
	case "!!int":
		return refused("integer", val, false)
	case "!!float":
		return refused("number", val, false)
	case "!!timestamp":
		return refused("timestamp", val, false)
	}
	if !strings.HasPrefix(tag, "!!") {
		// A local tag is whatever followed a "!" (a password such as
		// !Secret123 is read as one): not shown.
		return "a value with a custom tag"
	}
	return refused("value tagged "+tag, val, true)
}
