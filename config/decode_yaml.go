package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
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
		for i, e := range x.vals[line] {
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
