package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// decodeJSON checks the document against the schema token by token, so that
// every unknown field, duplicate key and value of the wrong type is reported
// with its field path and line (encoding/json reports only the first, matches
// field names case-insensitively, lets a duplicate key win silently and
// leaves map keys out of its paths). It then decodes what is valid.
func decodeJSON(data []byte) decoded {
	d := decoded{file: &File{}, pos: positions{}}
	if bytes.HasPrefix(data, utf8BOM) {
		// Editors on Windows add one; blank it out, keeping offsets.
		data = append([]byte("   "), data[len(utf8BOM):]...)
	}
	w := &jsonWalker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), d: &d}
	w.dec.UseNumber()
	for i, b := range data {
		if b == '\n' {
			w.nl = append(w.nl, i)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		d.fatal = true
		d.problems = []Problem{{Message: "the file is empty"}}
		return d
	}
	tree, ok := w.value(reflect.TypeFor[File](), "")
	if w.err == nil {
		at := w.at()
		if _, err := w.dec.Token(); err != io.EOF {
			d.problems = append(d.problems, Problem{Line: at[0], Column: at[1], Message: "unexpected data after the top-level JSON object"})
		}
	}
	if w.err != nil {
		// Only the syntax error: what came before it is moot until it is fixed.
		d.fatal = true
		d.problems = []Problem{w.syntax()}
		return d
	}
	if !ok {
		d.fatal = true
		return d
	}
	b, err := json.Marshal(tree)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(d.file)
	}
	if err != nil {
		// The walker accepted something encoding/json does not: report it
		// rather than lose it.
		d.fatal = true
		d.problems = append(d.problems, Problem{Message: err.Error()})
	}
	return d
}

type jsonWalker struct {
	data []byte
	dec  *json.Decoder
	nl   []int // offsets of '\n'
	d    *decoded
	err  error // the first syntax error; the walk stops at it
}

var durationType = reflect.TypeFor[Duration]()

var utf8BOM = []byte("\xef\xbb\xbf")

// at returns the line and column of the next token.
func (w *jsonWalker) at() [2]int {
	off := int(w.dec.InputOffset())
	for off < len(w.data) {
		switch w.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return w.lineCol(off)
}

func (w *jsonWalker) lineCol(off int) [2]int {
	i := sort.SearchInts(w.nl, off) // newlines before off
	start := 0
	if i > 0 {
		start = w.nl[i-1] + 1
	}
	return [2]int{i + 1, off - start + 1}
}

func (w *jsonWalker) token() json.Token {
	if w.err != nil {
		return nil
	}
	t, err := w.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		w.err = err
		return nil
	}
	return t
}

func (w *jsonWalker) syntax() Problem {
	var se *json.SyntaxError
	if errors.As(w.err, &se) {
		at := w.lineCol(int(se.Offset))
		return Problem{Line: at[0], Column: at[1], Message: "invalid JSON: " + se.Error()}
	}
	if errors.Is(w.err, io.ErrUnexpectedEOF) {
		return Problem{Message: "invalid JSON: unexpected end of file"}
	}
	return Problem{Message: "invalid JSON: " + w.err.Error()}
}

func (w *jsonWalker) problem(path string, at [2]int, format string, args ...any) {
	w.d.problems = append(w.d.problems, Problem{Path: path, Line: at[0], Column: at[1], Message: fmt.Sprintf(format, args...)})
}

// skip skips the rest of a value whose first token was tok.
func (w *jsonWalker) skip(tok json.Token) {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return
	}
	for depth := 1; depth > 0 && w.err == nil; {
		switch w.token() {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// value reads one value that must have type t. It returns what to decode
// (nil for null) and false if the value was refused.
func (w *jsonWalker) value(t reflect.Type, path string) (any, bool) {
	at := w.at()
	tok := w.token()
	if w.err != nil {
		return nil, false
	}
	if tok == nil {
		return nil, true // null leaves the field unset
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ok := false
	switch v := tok.(type) {
	case json.Delim:
		switch {
		case v == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) && t != durationType:
			return w.object(t, path)
		case v == '[' && t.Kind() == reflect.Slice:
			return w.array(t, path)
		}
	case string:
		if t == durationType {
			var d Duration
			ok = d.parse(v) == nil
		} else {
			ok = t.Kind() == reflect.String
		}
	case json.Number:
		switch {
		case t == durationType:
			f, err := strconv.ParseFloat(string(v), 64)
			var d Duration
			ok = err == nil && d.seconds(f) == nil
		case t.Kind() == reflect.Int:
			_, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
			ok = err == nil
		case t.Kind() == reflect.Float64:
			_, err := strconv.ParseFloat(string(v), 64)
			ok = err == nil
		}
	case bool:
		ok = t.Kind() == reflect.Bool
	}
	if ok {
		return tok, true
	}
	got := describeJSON(tok)
	if n, isNum := tok.(json.Number); isNum && (t == durationType || t.Kind() == reflect.Float64 ||
		(t.Kind() == reflect.Int && !strings.ContainsAny(string(n), ".eE"))) {
		got += " (out of range)" // the kind is right, the size is not
	}
	w.problem(path, at, "want %s, got %s", want(t), got)
	w.d.scopes = append(w.d.scopes, path)
	w.skip(tok)
	return nil, false
}

func (w *jsonWalker) object(t reflect.Type, path string) (any, bool) {
	obj := map[string]any{}
	first := map[string][2]int{}
	for w.err == nil && w.dec.More() {
		at := w.at()
		key, _ := w.token().(string)
		if w.err != nil {
			break
		}
		kp := join(path, seg(key))
		if _, ok := w.d.pos[kp]; !ok {
			w.d.pos[kp] = at
		}
		if f, dup := first[key]; dup {
			w.problem(kp, at, "duplicate key %s (first at line %d)", quoteShort(key, 40), f[0])
			w.skip(w.token())
			continue
		}
		first[key] = at
		var vt reflect.Type
		if t.Kind() == reflect.Map {
			vt = t.Elem()
		} else if vt = fieldType(t, key); vt == nil {
			w.problem(kp, at, "%s", unknownField(t, key))
			w.skip(w.token())
			continue
		}
		if v, ok := w.value(vt, kp); ok && v != nil {
			obj[key] = v
		}
	}
	if w.token() != json.Delim('}') && w.err == nil {
		w.err = errors.New("malformed object") // unreachable: Token checks syntax
	}
	return obj, w.err == nil
}

func (w *jsonWalker) array(t reflect.Type, path string) (any, bool) {
	arr := []any{}
	for i := 0; w.err == nil && w.dec.More(); i++ {
		ip := index(path, i)
		if _, ok := w.d.pos[ip]; !ok {
			w.d.pos[ip] = w.at()
		}
		v, _ := w.value(t.Elem(), ip)
		arr = append(arr, v) // keep indexes: a refused element decodes as zero
	}
	if w.token() != json.Delim(']') && w.err == nil {
		w.err = errors.New("malformed array")
	}
	return arr, w.err == nil
}

// describeJSON describes a JSON token, repeating at most a few characters
// of a string or number (refused).
func describeJSON(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "a list"
	case string:
		return refused("string", v, true)
	case json.Number:
		return refused("number", string(v), false)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(tok)
}
