package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/adkbreaker/adkbreaker/config"
)

// A secret pasted into the wrong field must not reach the error (which
// lands in logs): type errors name the kind of the value and at most its
// first two characters.
const (
	pasted        = "hunter2pw"                  // the secret typed into the wrong field
	pastedNeedle  = "unter2"                     // no more of it than "hu" may appear
	pastedNumber  = "31415926535897932384626433" // a numeric secret (an account number, a long PIN)
	numericNeedle = "415926"
)

func noEcho(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); strings.Contains(msg, pastedNeedle) || strings.Contains(msg, numericNeedle) {
		t.Errorf("%s: the error repeats the value:\n%s", what, msg)
	}
}

// TestTypeErrorsDoNotEchoTheValue: a secret in an integer, number, boolean,
// duration or list field, in YAML and JSON, is reported by field path,
// line, what was wanted and the kind of what was written, every problem at
// once, and never repeated.
func TestTypeErrorsDoNotEchoTheValue(t *testing.T) {
	const yamlSrc = `version: 1
fleet:
  address: redis:6379
  db: hunter2pw
defaults:
  turn_limit: 31415926535897932384626433
  policy:
    open_for: hunter2pw
    failure_rate: hunter2pw
dependencies:
  billing-api:
    cache_last_good: hunter2pw
    tools: hunter2pw
mcp_servers:
  notes:
    url: https://notes.example/mcp
    max_tools: hunter2pw
    call_timeout: 31415926535897932384626433
`
	const jsonSrc = `{"version": 1,
 "fleet": {"address": "redis:6379", "db": "hunter2pw"},
 "defaults": {"turn_limit": 31415926535897932384626433,
   "policy": {"open_for": "hunter2pw", "failure_rate": "hunter2pw"}},
 "dependencies": {"billing-api": {"cache_last_good": "hunter2pw", "tools": "hunter2pw"}},
 "mcp_servers": {"notes": {"url": "https://notes.example/mcp", "max_tools": "hunter2pw",
   "call_timeout": 31415926535897932384626433}}}`
	want := map[string]string{
		"fleet.db":                                 `want an integer, got a string of 9 characters ("hu…")`,
		"defaults.turn_limit":                      `want an integer, got a number of 26 characters (31…) (out of range)`,
		"defaults.policy.open_for":                 `want a duration like "30s" or "1m30s", or a number of seconds, got a string of 9 characters ("hu…")`,
		"defaults.policy.failure_rate":             `want a number, got a string of 9 characters ("hu…")`,
		"dependencies.billing-api.cache_last_good": `want true or false, got a string of 9 characters ("hu…")`,
		"dependencies.billing-api.tools":           `want a list of strings, got a string of 9 characters ("hu…")`,
		"mcp_servers.notes.max_tools":              `want an integer, got a string of 9 characters ("hu…")`,
		"mcp_servers.notes.call_timeout":           `want a duration like "30s" or "1m30s", or a number of seconds, got a number of 26 characters (31…) (out of range)`,
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		file, src string
		format    config.Format
	}{{"agent.yaml", yamlSrc, config.YAML}, {"agent.json", jsonSrc, config.JSON}} {
		t.Run(tc.format.String(), func(t *testing.T) {
			_, err := config.Parse([]byte(tc.src), tc.format)
			noEcho(t, "Parse", err)
			ps := problems(t, err)
			if len(ps) != len(want) {
				t.Errorf("%d problems, want %d (every one at once):\n%s", len(ps), len(want), list(ps))
			}
			for path, msg := range want {
				if p := find(t, ps, path); p.Message != msg || p.Line == 0 {
					t.Errorf("%s: got %q (line %d), want %q with a line", path, p.Message, p.Line, msg)
				}
			}

			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = config.Load(path)
			noEcho(t, "Load", err)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.File != path || len(ce.Problems) != len(want) {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

// TestDurationUnmarshalJSONDoesNotEchoTheValue: a File decoded with
// encoding/json directly reports a bad duration by field and kind only.
func TestDurationUnmarshalJSONDoesNotEchoTheValue(t *testing.T) {
	var p config.Policy
	for _, in := range []string{`{"open_for": "hunter2pw"}`, `{"open_for": 31415926535897932384626433e300}`} {
		err := json.Unmarshal([]byte(in), &p)
		noEcho(t, in, err)
		if err == nil || !strings.Contains(err.Error(), "open_for") {
			t.Errorf("%s: got %v, want an error naming open_for", in, err)
		}
	}
}

// TestShortValuesAndNearMissesAreShown: a value too short to be a secret,
// or a near miss of a valid choice, is still repeated whole: it is what the
// user needs to see.
func TestShortValuesAndNearMissesAreShown(t *testing.T) {
	for _, tc := range []struct {
		src, path, want string
	}{
		{"version: 1\nfleet:\n  address: redis:6379\n  db: two\n", "fleet.db", `want an integer, got the string "two"`},
		{"version: 1\ndefaults:\n  policy:\n    open_for: 5 m\n", "defaults.policy.open_for", `got the string "5 m"`},
		{"version: 1\ndefaults:\n  unmapped_tools: protec\n", "defaults.unmapped_tools", `got the string "protec" (did you mean "protect"?)`},
		{"version: 1\ndefaults:\n  unmapped_tools: hunter2pw\n", "defaults.unmapped_tools", `got a string of 9 characters ("hu…")`},
		{"version: 1\nmodels:\n  chat:\n    endpoints:\n      - {model: m, backend: anthropic}\n", "models.chat.endpoints[0].backend", `unknown backend "anthropic" (want "gemini_api", "vertex_ai" or "openai")`},
		{"version: 1\nmodels:\n  chat:\n    endpoints:\n      - {model: m, backend: hunter2pw}\n", "models.chat.endpoints[0].backend", `unknown backend: a string of 9 characters ("hu…") (want "gemini_api", "vertex_ai" or "openai")`},
		{"version: 1\nfleet:\n  address: hunter2pw\n", "fleet.address", `want host:port, got a string of 9 characters ("hu…")`},
	} {
		_, err := config.Parse([]byte(tc.src), config.YAML)
		if p := find(t, problems(t, err), tc.path); !strings.Contains(p.Message, tc.want) {
			t.Errorf("%s: got %q, want it to contain %q", tc.path, p.Message, tc.want)
		}
	}
}

// TestNoFieldEchoesAPastedSecret writes a secret, as a string and as a long
// number, into every field of the file in turn (YAML and JSON) and checks
// that no problem repeats it: type errors and the validation of every
// value field alike. (A number in a number field is a number: a range
// problem shows it, as "must be in (0, 1], got 1.5" must.)
func TestNoFieldEchoesAPastedSecret(t *testing.T) {
	leaves := schemaLeaves(reflect.TypeFor[config.File](), nil)
	if len(leaves) < 60 {
		t.Fatalf("found %d fields, want the whole schema", len(leaves))
	}
	for _, leaf := range leaves {
		path := leaf.path
		if len(path) == 1 && path[0] == "version" {
			continue // set in every document
		}
		values := []any{pasted, yamlNumber(pastedNumber)}
		if leaf.typ.Kind() == reflect.Float64 {
			values = values[:1]
		}
		for _, v := range values {
			doc := map[string]any{"version": 1}
			set(doc, path, v)
			y, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = config.Parse(y, config.YAML)
			noEcho(t, "YAML "+strings.TrimSpace(string(y)), err)

			jv := any(json.Number(pastedNumber))
			if s, ok := v.(string); ok {
				jv = s
			}
			jdoc := map[string]any{"version": 1}
			set(jdoc, path, jv)
			j, err := json.Marshal(jdoc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = config.Parse(j, config.JSON)
			noEcho(t, "JSON "+string(j), err)
		}
	}
}

// yamlNumber marshals as a bare YAML number.
type yamlNumber string

func (n yamlNumber) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: string(n)}, nil // plain: too large for !!int
}

// schemaLeaf is a field of the file: its path (a string segment is a field
// or a map key, "x"; an int segment a list index) and its type.
type schemaLeaf struct {
	path []any
	typ  reflect.Type
}

// schemaLeaves lists every field of t, lists and maps included, down to
// the scalars.
func schemaLeaves(t reflect.Type, prefix []any) []schemaLeaf {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	with := func(seg any) []any { return append(append([]any(nil), prefix...), seg) }
	switch {
	case t == reflect.TypeFor[config.Duration]():
		return []schemaLeaf{{prefix, t}}
	case t.Kind() == reflect.Struct:
		var out []schemaLeaf
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			out = append(out, schemaLeaves(t.Field(i).Type, with(name))...)
		}
		return out
	case t.Kind() == reflect.Map:
		return schemaLeaves(t.Elem(), with("x"))
	case t.Kind() == reflect.Slice:
		return append([]schemaLeaf{{prefix, t}}, schemaLeaves(t.Elem(), with(0))...)
	}
	return []schemaLeaf{{prefix, t}}
}

// set writes v at path in doc, creating maps and one-element lists.
func set(doc map[string]any, path []any, v any) {
	var cur any = doc
	for i, seg := range path {
		last := i == len(path)-1
		var next any = v
		if !last {
			if _, isIndex := path[i+1].(int); isIndex {
				next = []any{nil}
			} else {
				next = map[string]any{}
			}
		}
		switch c := cur.(type) {
		case map[string]any:
			k := seg.(string)
			if existing, ok := c[k]; ok && !last {
				next = existing
			}
			c[k] = next
		case []any:
			if !last && c[0] != nil {
				next = c[0]
			}
			c[0] = next
		}
		cur = next
	}
}

// TestYAMLSyntaxErrorsDoNotEchoTheValue: what yaml.v3 itself quotes from
// the file — a value under an explicit tag, an alias — and a local tag
// (a password starting with "!" is read as one) are not repeated either.
func TestYAMLSyntaxErrorsDoNotEchoTheValue(t *testing.T) {
	for src, want := range map[string]string{
		"version: 1\nfleet:\n  db: !!int hunter2pw\n":       "invalid YAML: cannot decode !!str `hu…` as a !!int",
		"version: 1\nfleet:\n  db: *hunter2pw\n":            "invalid YAML: unknown anchor 'hu…' referenced",
		"version: 1\nfleet:\n  db: !hunter2pw x\n":          "fleet.db: want an integer, got a value with a custom tag (line 3, column 7)",
		"version: 1\nfleet:\n  db: !!timestamp hunter2pw\n": "invalid YAML: cannot decode !!str `hu…` as a !!timestamp",
	} {
		_, err := config.Parse([]byte(src), config.YAML)
		noEcho(t, src, err)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}
