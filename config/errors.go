package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Path names the field, as written in the file:
	// "dependencies.billing-api.policy.open_for",
	// "models.chat.endpoints[1].backend". Map keys that are not plain words
	// are quoted: `dependencies."bad name"`. Empty for the file as a whole.
	Path string
	// Line and Column locate the problem in the file (1-based), or are 0 when
	// unknown (always 0 from File.Validate, which has no file).
	Line, Column int
	// Message says what is wrong and what is expected.
	Message string
}

// String formats the problem as "path: message (line N)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	switch {
	case p.Line > 0 && p.Column > 0:
		fmt.Fprintf(&b, " (line %d, column %d)", p.Line, p.Column)
	case p.Line > 0:
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

// Error is returned by Parse, Load and File.Validate for an invalid
// configuration: every problem found, in file order for decoding problems and
// then in field order for validation problems.
type Error struct {
	// File is the file's path when the configuration came from Load.
	File string
	// Problems holds at least one problem.
	Problems []Problem
}

// Error formats every problem, one per line after a heading:
//
//	config agent.yaml: 2 problems:
//	  version: must be 1, got 2 (line 1)
//	  defaults.turn_limit: must be ≥ 0, got -1 (line 4)
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" ")
		b.WriteString(e.File)
	}
	if len(e.Problems) == 1 {
		b.WriteString(": ")
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, ": %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects Problems.
type problems []Problem

func (ps *problems) add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns nil or an *Error holding ps.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: slices.Clone(ps)}
}

// splitErrs turns an error from registry.Policy.Validate ("field: message",
// possibly joined) into problems under prefix.
func splitErrs(prefix string, err error) []Problem {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		field, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok || strings.ContainsAny(field, " ") {
			out = append(out, Problem{Path: prefix, Message: e.Error()})
			continue
		}
		out = append(out, Problem{Path: join(prefix, field), Message: msg})
	}
	return out
}

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// seg formats a map key as a path segment: plain keys as they are, others
// (empty, with spaces, dots, brackets, quotes or unprintable runes) quoted.
func seg(key string) string {
	if key == "" || !utf8.ValidString(key) {
		return strconv.Quote(key)
	}
	for _, r := range key {
		if !unicode.IsPrint(r) || r == ' ' || r == '.' || r == '[' || r == ']' || r == '"' {
			return strconv.Quote(key)
		}
	}
	return key
}

// index returns path + "[i]".
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// positions maps field paths to where they are written in the file.
type positions map[string][2]int

// locate fills in the line of problems that have none from the position of
// their path or, failing that, its nearest written ancestor.
func (pos positions) locate(ps []Problem) {
	if pos == nil {
		return
	}
	for i := range ps {
		if ps[i].Line != 0 {
			continue
		}
		for p := ps[i].Path; p != ""; p = parent(p) {
			if at, ok := pos[p]; ok {
				ps[i].Line = at[0]
				break
			}
		}
	}
}

// parent drops the last segment of a path ("a.b[2]" → "a.b", "a.b" → "a").
func parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	// The last segment may be quoted and contain dots.
	if strings.HasSuffix(path, `"`) {
		for i := len(path) - 2; i >= 0; i-- {
			if path[i] == '"' && (i == 0 || path[i-1] == '.') {
				if q, err := strconv.Unquote(path[i:]); err == nil && strconv.Quote(q) == path[i:] {
					if i == 0 {
						return ""
					}
					return path[:i-1]
				}
			}
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// fieldNames returns the file names of t's fields, in declaration order.
func fieldNames(t reflect.Type) []string {
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// fieldType returns the type of t's field written as name, or nil.
func fieldType(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if n == name {
			return t.Field(i).Type
		}
	}
	return nil
}

// schemaTypes are the struct types of the file, by their Go name: File and
// every struct type reachable from its fields, so that none is missed when
// one is added.
var schemaTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || m[t.String()] != nil {
			return
		}
		m[t.String()] = t
		for i := range t.NumField() {
			add(t.Field(i).Type)
		}
	}
	add(reflect.TypeFor[File]())
	return m
}()

// unknownField is the message for a field t does not have.
func unknownField(t reflect.Type, name string) string {
	msg := fmt.Sprintf("unknown field %q", name)
	if t == nil || t.Kind() != reflect.Struct {
		return msg
	}
	names := fieldNames(t)
	if s := suggest(names, name); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + " (valid fields: " + strings.Join(names, ", ") + ")"
}

// suggest returns the name in names closest to s, if it is close.
func suggest(names []string, s string) string {
	best, bestD := "", 3
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
		if len(s)-len(n) >= bestD || len(n)-len(s) >= bestD {
			continue // the distance is at least the difference in length
		}
		if d := distance(strings.ToLower(n), strings.ToLower(s)); d < bestD && d <= len(n)/3 {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance,
// bounded: long inputs are not compared.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// want describes what a value of type t must look like.
func want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Duration]() {
		return `a duration like "30s" or "1m30s", or a number of seconds`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Struct:
		return "a mapping of field names to values"
	case reflect.Map:
		return "a mapping of names to values"
	}
	return t.String()
}

// A refused value is named by its kind and at most a few of its
// characters, never in full: a value typed into the wrong field may be a
// secret (a password pasted as fleet.db), and problems end up in logs.
const (
	// shownWhole is the longest value repeated whole: a typo such as
	// "five", "soon" or "1.5", too short to be a secret.
	shownWhole = 4
	// shownPrefix is how many leading characters of a longer value are
	// repeated.
	shownPrefix = 2
)

// refused describes a refused value of a kind ("string", "number"):
// `the string "five"` when it is short, `a string of 9 characters ("hu…")`
// otherwise. quote quotes the characters shown (strings); numbers are shown
// as they are.
func refused(kind, v string, quote bool) string {
	show := func(s string) string {
		if quote {
			return strconv.Quote(s)
		}
		return s
	}
	n := utf8.RuneCountInString(v)
	if n <= shownWhole {
		return "the " + kind + " " + show(v)
	}
	article := "a"
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		article = "an"
	}
	return fmt.Sprintf("%s %s of %d characters (%s)", article, kind, n, show(string([]rune(v)[:shownPrefix])+"…"))
}

// refusedChoice describes a refused value of a field with a few valid
// choices: whole, with a suggestion, if it is a near miss of a choice
// ("protec") or one of known (words a user may mean, like another
// provider's name), since then it is no secret; as refused otherwise.
func refusedChoice(v string, choices []string, known ...string) string {
	if s := suggest(choices, v); s != "" {
		return fmt.Sprintf("the string %s (did you mean %q?)", quoteShort(v, 40), s)
	}
	if slices.Contains(known, strings.ToLower(v)) {
		return "the string " + strconv.Quote(v)
	}
	return refused("string", v, true)
}

// quoteShort quotes s, shortened to at most n runes.
func quoteShort(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return strconv.Quote(s)
}

// asError returns err as an *Error, or wraps it as one problem.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Problems: []Problem{{Message: err.Error()}}}
}
