package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// parse parses src, guessing nothing: format is explicit.
func parse(t *testing.T, src string, f config.Format) (*config.File, error) {
	t.Helper()
	return config.Parse([]byte(src), f)
}

// mustParse fails the test unless src is valid.
func mustParse(t *testing.T, src string, f config.Format) *config.File {
	t.Helper()
	c, err := parse(t, src, f)
	if err != nil {
		t.Fatalf("Parse(%s): %v\n%s", f, err, src)
	}
	return c
}

// problems returns the problems of err, failing unless it is a *config.Error.
func problems(t *testing.T, err error) []config.Problem {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want a *config.Error")
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T is not a *config.Error: %v", err, err)
	}
	if len(ce.Problems) == 0 {
		t.Fatalf("*config.Error without problems: %v", err)
	}
	return ce.Problems
}

// find returns the problem at path, failing if there is none.
func find(t *testing.T, ps []config.Problem, path string) config.Problem {
	t.Helper()
	for _, p := range ps {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no problem at %q; got:\n%s", path, list(ps))
	return config.Problem{}
}

func list(ps []config.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFullFixtures parses the YAML and JSON fixtures (the same configuration)
// and follows them through PolicyFor and RegistryOptions to the registry.
func TestFullFixtures(t *testing.T) {
	y, err := config.Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := config.Load("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(y, j) {
		t.Fatalf("YAML and JSON fixtures differ:\nYAML %+v\nJSON %+v", y, j)
	}

	d := y.Defaults
	if d.ShortCircuitLimit != 3 || d.TurnLimit != 6 || !d.RemoveUnavailable || d.UnmappedTools != "pass_through" || d.MaxBreakers != 64 {
		t.Errorf("defaults = %+v", d)
	}
	if got := len(y.Dependencies); got != 3 {
		t.Fatalf("%d dependencies, want 3", got)
	}
	billing := y.Dependencies["billing-api"]
	if !reflect.DeepEqual(billing.Tools, []string{"get_invoice", "list_invoices", "billing_*"}) ||
		!reflect.DeepEqual(billing.Alternatives, []string{"search_cached_invoices"}) || !billing.CacheLastGood {
		t.Errorf("billing-api = %+v", billing)
	}
	if crm := y.Dependencies["crm"]; crm.Policy != nil || !crm.CacheLastGood {
		t.Errorf("crm = %+v, want no policy of its own and cache_last_good", crm)
	}

	base := registry.Policy{
		ConsecutiveFailures: 5, FailureRate: 0.5, MinCalls: 10, Window: time.Minute,
		OpenFor: 30 * time.Second, OpenBackoff: 2, MaxOpenFor: 5 * time.Minute, OpenJitter: 0.2,
		HalfOpenProbes: 2, ProbeLease: 45 * time.Second, MaxRetryHint: time.Hour,
	}
	if got := y.Defaults.Policy.Registry(); got != base {
		t.Errorf("defaults.policy =\n%+v, want\n%+v", got, base)
	}
	want := map[string]registry.Policy{
		"billing-api": func() registry.Policy {
			p := base
			p.ConsecutiveFailures, p.OpenFor, p.SlowCall = 3, 90*time.Second, 2500*time.Millisecond
			return p
		}(),
		"search": func() registry.Policy {
			p := base
			p.DisableFailureRate, p.NoJitter, p.Window = true, true, 90*time.Second
			return p
		}(),
		"crm":       base,
		"not-there": base,
		"notes": func() registry.Policy {
			p := base
			p.ConsecutiveFailures, p.OpenFor = 4, time.Minute
			return p
		}(),
	}
	for name, w := range want {
		if got := y.PolicyFor(name); got != w {
			t.Errorf("PolicyFor(%q) =\n%+v, want\n%+v", name, got, w)
		}
		if err := y.PolicyFor(name).Validate(); err != nil {
			t.Errorf("PolicyFor(%q) invalid: %v", name, err)
		}
	}

	reg, err := registry.New(y.RegistryOptions()...)
	if err != nil {
		t.Fatalf("registry.New(RegistryOptions()): %v", err)
	}
	if reg.Cap() != 64 {
		t.Errorf("Cap() = %d, want 64", reg.Cap())
	}
	for name, w := range want {
		if got := reg.PolicyFor(registry.Key(name)); got != w.WithDefaults() {
			t.Errorf("registry policy of %q =\n%+v, want\n%+v", name, got, w.WithDefaults())
		}
	}

	chat := y.Models["chat"].Endpoints
	if len(chat) != 2 {
		t.Fatalf("models.chat: %d endpoints, want 2", len(chat))
	}
	if e := chat[0]; e.Backend != config.BackendGeminiAPI || e.Model != "gemini-2.5-flash" || e.APIKeyEnv != "GOOGLE_API_KEY" || time.Duration(e.Timeout) != 30*time.Second {
		t.Errorf("endpoints[0] = %+v", e)
	}
	if e := chat[1]; e.Backend != config.BackendVertexAI || e.Location != "us-central1" || e.Project != "my-project" ||
		time.Duration(e.Timeout) != 45*time.Second || e.Policy == nil || e.Policy.ConsecutiveFailures != 2 || time.Duration(e.Policy.OpenFor) != time.Minute {
		t.Errorf("endpoints[1] = %+v", e)
	}
	if chat[0].Identity() == chat[1].Identity() {
		t.Errorf("endpoints share identity %q", chat[0].Identity())
	}
}

// TestMarshalRoundTrip marshals a parsed File back to YAML and JSON and
// parses it again: durations must come back as durations, not nanoseconds
// read as seconds.
func TestMarshalRoundTrip(t *testing.T) {
	c, err := config.Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yb, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustParse(t, string(yb), config.YAML); !reflect.DeepEqual(got, c) {
		t.Errorf("YAML round trip changed the file:\n%s", yb)
	}
	if !strings.Contains(string(yb), "open_for: 1m30s") {
		t.Errorf("durations are not marshaled as strings:\n%s", yb)
	}
	jb, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustParse(t, string(jb), config.JSON); !reflect.DeepEqual(got, c) {
		t.Errorf("JSON round trip changed the file:\n%s", jb)
	}
}

func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		yaml, json string
		want       time.Duration
	}{
		{`30s`, `"30s"`, 30 * time.Second},
		{`"1m30s"`, `"1m30s"`, 90 * time.Second},
		{`1m30s`, `" 1m30s "`, 90 * time.Second},
		{`90`, `90`, 90 * time.Second},
		{`2.5`, `2.5`, 2500 * time.Millisecond},
		{`250ms`, `"250ms"`, 250 * time.Millisecond},
		{`1h`, `3600`, time.Hour},
		{`0`, `0`, 0},
		{`~`, `null`, 0},
	} {
		y := mustParse(t, "version: 1\ndefaults:\n  policy:\n    open_for: "+tc.yaml+"\n", config.YAML)
		if got := time.Duration(y.Defaults.Policy.OpenFor); got != tc.want {
			t.Errorf("YAML open_for: %s = %v, want %v", tc.yaml, got, tc.want)
		}
		j := mustParse(t, `{"version": 1, "defaults": {"policy": {"open_for": `+tc.json+`}}}`, config.JSON)
		if got := time.Duration(j.Defaults.Policy.OpenFor); got != tc.want {
			t.Errorf("JSON open_for: %s = %v, want %v", tc.json, got, tc.want)
		}
	}
}

func TestDurationErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, json, got string }{
		{`abc`, `"abc"`, `"abc"`},
		{`"30"`, `"30"`, `"30"`}, // a string needs a unit
		{`[1]`, `[1]`, "a list"},
		{`{a: 1}`, `{"a": 1}`, "a mapping"},
		{`1e300`, `1e300`, "a number of 5 characters (1e…) (out of range)"},
		{`.nan`, `true`, ""},
	} {
		_, err := parse(t, "version: 1\ndefaults:\n  policy:\n    probe_lease: "+tc.yaml+"\n", config.YAML)
		p := find(t, problems(t, err), "defaults.policy.probe_lease")
		if !strings.Contains(p.Message, `want a duration like "30s"`) || !strings.Contains(p.Message, tc.got) || p.Line != 4 {
			t.Errorf("YAML probe_lease: %s: %v", tc.yaml, p)
		}
		_, err = parse(t, `{"version": 1, "defaults": {"policy": {"probe_lease": `+tc.json+`}}}`, config.JSON)
		p = find(t, problems(t, err), "defaults.policy.probe_lease")
		if !strings.Contains(p.Message, `want a duration like "30s"`) || p.Line != 1 {
			t.Errorf("JSON probe_lease: %s: %v", tc.json, p)
		}
	}
	// Negative durations parse, then fail validation with the value shown.
	_, err := parse(t, "version: 1\ndependencies:\n  billing-api:\n    policy:\n      open_for: -1s\n", config.YAML)
	p := find(t, problems(t, err), "dependencies.billing-api.policy.open_for")
	if want := "dependencies.billing-api.policy.open_for: must be ≥ 0, got -1s (line 5)"; p.String() != want {
		t.Errorf("got %q, want %q", p.String(), want)
	}
}

// TestDurationUnmarshalJSONDirect checks Duration on its own, as users who
// json.Unmarshal a File themselves would see it: encoding/json names the
// field.
func TestDurationUnmarshalJSONDirect(t *testing.T) {
	var p config.Policy
	err := json.Unmarshal([]byte(`{"open_for": "soon"}`), &p)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "open_for" {
		t.Fatalf("got %v, want an UnmarshalTypeError naming open_for", err)
	}
	if err := json.Unmarshal([]byte(`{"open_for": 1.5}`), &p); err != nil || time.Duration(p.OpenFor) != 1500*time.Millisecond {
		t.Fatalf("1.5 → %v, %v", time.Duration(p.OpenFor), err)
	}
}

func TestUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name       string
		src        string
		format     config.Format
		path, want string
		line       int
	}{
		{"yaml top", "version: 1\nversoin: 1\n", config.YAML, "versoin", `unknown field "versoin" (did you mean "version"?)`, 2},
		{"yaml nested", "version: 1\ndependencies:\n  billing-api:\n    policy:\n      opne_for: 30s\n", config.YAML,
			"dependencies.billing-api.policy.opne_for", `unknown field "opne_for" (did you mean "open_for"?)`, 5},
		{"yaml far off", "version: 1\ndefaults:\n  colour: red\n", config.YAML,
			"defaults.colour", `unknown field "colour" (valid fields: short_circuit_limit, turn_limit,`, 3},
		{"yaml model", "version: 1\nmodels:\n  chat:\n    endpoints:\n      - model: m\n        backend: gemini_api\n        region: eu\n", config.YAML,
			"models.chat.endpoints[0].region", `unknown field "region"`, 7},
		{"json top", `{"version": 1, "versoin": 1}`, config.JSON, "versoin", `unknown field "versoin" (did you mean "version"?)`, 1},
		{"json nested", "{\"version\": 1,\n \"dependencies\": {\"billing-api\": {\"policy\": {\n  \"opne_for\": \"30s\"}}}}", config.JSON,
			"dependencies.billing-api.policy.opne_for", `unknown field "opne_for" (did you mean "open_for"?)`, 3},
		{"json case", `{"version": 1, "Defaults": {}}`, config.JSON, "Defaults", `unknown field "Defaults" (did you mean "defaults"?)`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src, tc.format)
			p := find(t, problems(t, err), tc.path)
			if !strings.HasPrefix(p.Message, tc.want) || p.Line != tc.line {
				t.Errorf("got %v, want %q at line %d", p, tc.want, tc.line)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error text does not name %s: %v", tc.path, err)
			}
		})
	}
}

// TestUnknownFieldsAll: every unknown field is reported, along with the
// validation problems of the rest of the file.
func TestUnknownFieldsAll(t *testing.T) {
	for _, tc := range []struct {
		src    string
		format config.Format
	}{
		{"version: 1\nfoo: 1\ndefaults:\n  bar: 2\n  turn_limit: -1\n  policy:\n    baz: 3\n", config.YAML},
		{`{"version": 1, "foo": 1, "defaults": {"bar": 2, "turn_limit": -1, "policy": {"baz": 3}}}`, config.JSON},
	} {
		_, err := parse(t, tc.src, tc.format)
		ps := problems(t, err)
		for _, path := range []string{"foo", "defaults.bar", "defaults.policy.baz", "defaults.turn_limit"} {
			find(t, ps, path)
		}
		if len(ps) != 4 {
			t.Errorf("%s: %d problems, want 4:\n%s", tc.format, len(ps), list(ps))
		}
	}
}

func TestTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		format     config.Format
		path, want string
	}{
		{"yaml string for int", "version: 1\ndefaults:\n  turn_limit: five\n", config.YAML, "defaults.turn_limit", `want an integer, got the string "five"`},
		{"yaml string for number", "version: 1\ndefaults:\n  policy:\n    failure_rate: half\n", config.YAML, "defaults.policy.failure_rate", `want a number, got the string "half"`},
		{"yaml int for bool", "version: 1\ndependencies:\n  a:\n    cache_last_good: 2\n", config.YAML, "dependencies.a.cache_last_good", "want true or false, got the integer 2"},
		{"yaml scalar for list", "version: 1\ndependencies:\n  a:\n    tools: get_invoice\n", config.YAML, "dependencies.a.tools", `want a list of strings, got a string of 11 characters ("ge…")`},
		{"yaml list for mapping", "version: 1\ndependencies: [a, b]\n", config.YAML, "dependencies", "want a mapping of names to values, got a list"},
		{"yaml string version", "version: one\n", config.YAML, "version", `want an integer, got the string "one"`},
		{"json string for int", `{"version": 1, "defaults": {"turn_limit": "five"}}`, config.JSON, "defaults.turn_limit", `want an integer, got the string "five"`},
		{"json float for int", `{"version": 1, "defaults": {"turn_limit": 2.5}}`, config.JSON, "defaults.turn_limit", "want an integer, got the number 2.5"},
		{"json string for bool", `{"version": 1, "dependencies": {"a": {"cache_last_good": "yes"}}}`, config.JSON, "dependencies.a.cache_last_good", `want true or false, got the string "yes"`},
		{"json number in list", `{"version": 1, "dependencies": {"a": {"tools": ["x", 5]}}}`, config.JSON, "dependencies.a.tools[1]", "want a string, got the number 5"},
		{"yaml top-level list", "- a\n- b\n", config.YAML, "", "want a mapping of field names to values, got a list"},
		{"yaml int out of range", "version: 1\ndefaults:\n  turn_limit: 99999999999999999999\n", config.YAML, "defaults.turn_limit", "want an integer, got a number of 20 characters (99…) (out of range)"},
		{"json top-level string", `"x"`, config.JSON, "", `want a mapping of field names to values, got the string "x"`},
		{"json number out of range", `{"version": 1, "defaults": {"policy": {"failure_rate": 1e999}}}`, config.JSON, "defaults.policy.failure_rate", "want a number, got a number of 5 characters (1e…) (out of range)"},
		{"json object for list", `{"version": 1, "models": {"m": {"endpoints": {}}}}`, config.JSON, "models.m.endpoints", "want a list, got an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src, tc.format)
			ps := problems(t, err)
			if p := find(t, ps, tc.path); p.Message != tc.want || p.Line == 0 {
				t.Errorf("got %v, want %q with a line", p, tc.want)
			}
			// A value of the wrong type is not reported again by validation
			// ("version: required" after version: one).
			if len(ps) != 1 {
				t.Errorf("%d problems, want 1:\n%s", len(ps), list(ps))
			}
		})
	}
}

// TestTypeErrorsAll: a file with several values of the wrong type reports
// each, and validation still reports the rest.
func TestTypeErrorsAll(t *testing.T) {
	for _, tc := range []struct {
		src    string
		format config.Format
	}{
		{"version: 1\ndefaults:\n  turn_limit: x\n  max_breakers: y\n  short_circuit_limit: -3\n  policy:\n    window: z\n", config.YAML},
		{`{"version": 1, "defaults": {"turn_limit": "x", "max_breakers": "y", "short_circuit_limit": -3, "policy": {"window": "z"}}}`, config.JSON},
	} {
		_, err := parse(t, tc.src, tc.format)
		ps := problems(t, err)
		for _, path := range []string{"defaults.turn_limit", "defaults.max_breakers", "defaults.policy.window", "defaults.short_circuit_limit"} {
			find(t, ps, path)
		}
		if len(ps) != 4 {
			t.Errorf("%s: %d problems, want 4:\n%s", tc.format, len(ps), list(ps))
		}
	}
}

// TestManyProblems: the invalid fixtures have a problem on nearly every
// line; Parse reports each, named by its path.
func TestManyProblems(t *testing.T) {
	want := map[string]string{
		"version":                                      "must be 1, got 2",
		"defaults.turn_limit":                          "must be ≥ 0, got -1",
		"defaults.unmapped_tools":                      `must be "protect" or "pass_through", got the string "drop"`,
		"defaults.policy.open_for":                     "must be ≥ 0, got -5s",
		"dependencies.billing-api.tools[0]":            "empty tool name",
		"dependencies.billing-api.policy.failure_rate": "must be in (0, 1], got 1.5",
		"dependencies.crm.tools[0]":                    `"get_invoice" is also mapped to dependency "billing-api"`,
		`dependencies."bad name"`:                      `invalid dependency name "bad name"`,
		"models.chat.endpoints[1].backend":             `unknown backend "anthropic"`,
		"models.chat.endpoints[2]":                     "duplicate",
		"models.empty.endpoints":                       "at least one endpoint",
	}
	lines := map[string]int{ // YAML only
		"version": 2, "defaults.turn_limit": 4, "defaults.policy.open_for": 7,
		"dependencies.billing-api.tools[0]": 10, "dependencies.billing-api.policy.failure_rate": 12,
		"models.chat.endpoints[1].backend": 23, "models.empty.endpoints": 27,
	}
	for _, name := range []string{"invalid_many.yaml", "invalid_many.json"} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load("testdata/" + name)
			ps := problems(t, err)
			for path, msg := range want {
				p := find(t, ps, path)
				if !strings.Contains(p.Message, msg) {
					t.Errorf("%s: got %q, want it to contain %q", path, p.Message, msg)
				}
				if l, ok := lines[path]; ok && strings.HasSuffix(name, ".yaml") && p.Line != l {
					t.Errorf("%s: line %d, want %d", path, p.Line, l)
				}
				if !strings.Contains(err.Error(), p.String()) {
					t.Errorf("error text lacks %q", p.String())
				}
			}
			if len(ps) != len(want) {
				t.Errorf("%d problems, want %d:\n%s", len(ps), len(want), list(ps))
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("config testdata/%s: %d problems:\n  ", name, len(ps))) {
				t.Errorf("error heading: %q", strings.SplitN(err.Error(), "\n", 2)[0])
			}
		})
	}
}

func TestToolMapping(t *testing.T) {
	for _, tc := range []struct {
		name, deps string
		path, want string
	}{
		{"two dependencies", "  a: {tools: [get_invoice]}\n  b: {tools: [get_invoice]}\n",
			"dependencies.b.tools[0]", `"get_invoice" is also mapped to dependency "a" (dependencies.a.tools[0]); a tool belongs to one dependency`},
		{"same pattern twice", "  a: {tools: [\"billing_*\"]}\n  b: {tools: [x, \"billing_*\"]}\n",
			"dependencies.b.tools[1]", `"billing_*" is also mapped to dependency "a"`},
		{"listed twice", "  a: {tools: [x, y, x]}\n", "dependencies.a.tools[2]", `"x" is listed twice (also tools[0])`},
		{"empty", "  a: {tools: [\"  \"]}\n", "dependencies.a.tools[0]", "empty tool name"},
		{"spaces", "  a: {tools: [\" x\"]}\n", "dependencies.a.tools[0]", `" x" has leading or trailing spaces`},
		{"bad pattern", "  a: {tools: [\"billing_[\"]}\n", "dependencies.a.tools[0]", `invalid pattern "billing_["`},
		{"own alternative", "  a: {tools: [x], alternatives: [x]}\n", "dependencies.a.alternatives[0]", `"x" is a tool of this dependency (it matches tools[0])`},
		{"own pattern alternative", "  a: {tools: [\"a_*\"], alternatives: [a_cached]}\n", "dependencies.a.alternatives[0]", `"a_cached" is a tool of this dependency`},
		{"empty alternative", "  a: {alternatives: [\"\"]}\n", "dependencies.a.alternatives[0]", "empty tool name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "version: 1\ndependencies:\n"+tc.deps, config.YAML)
			ps := problems(t, err)
			if p := find(t, ps, tc.path); !strings.HasPrefix(p.Message, tc.want) {
				t.Errorf("got %v, want %q", p, tc.want)
			}
			if len(ps) != 1 {
				t.Errorf("%d problems, want 1:\n%s", len(ps), list(ps))
			}
		})
	}
	// An exact name mapped elsewhere wins over this dependency's pattern, so
	// it is a fine alternative.
	mustParse(t, "version: 1\ndependencies:\n  a: {tools: [\"a_*\"], alternatives: [a_cached]}\n  cache: {tools: [a_cached]}\n", config.YAML)
}

func TestDependencyNames(t *testing.T) {
	for _, name := range []string{"billing-api", "api.v2", "mcp:github", "données", "x", strings.Repeat("n", registry.MaxKeyLen)} {
		c := &config.File{Version: 1, Dependencies: map[string]config.Dependency{name: {}}}
		if err := c.Validate(); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for name, path := range map[string]string{
		"":                       `dependencies.""`,
		"has space":              `dependencies."has space"`,
		"tab\there":              `dependencies."tab\there"`,
		"ctl\x01":                `dependencies."ctl\x01"`,
		"nbsp\u00a0":             `dependencies."nbsp\u00a0"`,
		"bad\xff":                `dependencies."bad\xff"`,
		strings.Repeat("n", 129): "dependencies." + strings.Repeat("n", 129),
		" leading":               `dependencies." leading"`,
	} {
		c := &config.File{Version: 1, Dependencies: map[string]config.Dependency{name: {}}}
		p := find(t, problems(t, c.Validate()), path)
		if !strings.Contains(p.Message, "invalid dependency name") {
			t.Errorf("name %q: %v", name, p)
		}
	}
	// From a file, the problem has the line of the name.
	_, err := parse(t, "version: 1\ndependencies:\n  ok: {}\n  \"not ok\": {}\n", config.YAML)
	if p := find(t, problems(t, err), `dependencies."not ok"`); p.Line != 4 {
		t.Errorf("got %v, want line 4", p)
	}
}

func TestMaxBreakers(t *testing.T) {
	_, err := parse(t, "version: 1\ndefaults:\n  max_breakers: 2\ndependencies:\n  a: {}\n  b: {}\n  c: {policy: {open_for: 1m}}\n", config.YAML)
	if p := find(t, problems(t, err), "defaults.max_breakers"); p.Message != "must be at least the number of dependencies (3), got 2" {
		t.Errorf("got %v", p)
	}
	c := &config.File{Version: 1, Dependencies: map[string]config.Dependency{}}
	for i := range registry.DefaultMaxBreakers + 1 {
		c.Dependencies[fmt.Sprint("dep", i)] = config.Dependency{}
	}
	if p := find(t, problems(t, c.Validate()), "defaults.max_breakers"); !strings.Contains(p.Message, "default cap is 1024") {
		t.Errorf("got %v", p)
	}
	c.Defaults.MaxBreakers = 2000
	if err := c.Validate(); err != nil {
		t.Errorf("max_breakers 2000: %v", err)
	}
}

func TestMerge(t *testing.T) {
	base := registry.Policy{ConsecutiveFailures: 5, FailureRate: 0.5, OpenFor: 30 * time.Second, NoJitter: true, ProbeLease: time.Minute}
	over := registry.Policy{ConsecutiveFailures: 3, Window: 2 * time.Minute, DisableFailureRate: true}
	got := config.Merge(base, over)
	want := registry.Policy{ConsecutiveFailures: 3, FailureRate: 0.5, Window: 2 * time.Minute, OpenFor: 30 * time.Second,
		NoJitter: true, DisableFailureRate: true, ProbeLease: time.Minute}
	if got != want {
		t.Errorf("Merge =\n%+v, want\n%+v", got, want)
	}
	if got := config.Merge(base, registry.Policy{}); got != base {
		t.Errorf("Merge(base, zero) = %+v, want base", got)
	}
	if got := config.Merge(registry.Policy{}, base); got != base {
		t.Errorf("Merge(zero, base) = %+v, want base", got)
	}
	// Apply can also turn switches off; Merge cannot.
	p := config.Policy{NoJitter: ptr(false), MinCalls: 7}
	if got := p.Apply(base); got.NoJitter || got.MinCalls != 7 || got.ConsecutiveFailures != 5 {
		t.Errorf("Apply = %+v", got)
	}
	if got := (config.Policy{}).Apply(base); got != base {
		t.Errorf("zero Apply = %+v, want base", got)
	}
}

// TestInheritance: a dependency's policy inherits every field it does not
// set from defaults.policy, switches included, and may turn switches off.
func TestInheritance(t *testing.T) {
	c := mustParse(t, `
version: 1
defaults:
  policy:
    consecutive_failures: 4
    open_for: 45s
    no_jitter: true
    disable_failure_rate: true
dependencies:
  inherit:
    policy: {}
  override:
    policy:
      consecutive_failures: 9
      no_jitter: false
  plain: {}
`, config.YAML)
	def := registry.Policy{ConsecutiveFailures: 4, OpenFor: 45 * time.Second, NoJitter: true, DisableFailureRate: true}
	if got := c.PolicyFor("inherit"); got != def {
		t.Errorf("inherit: %+v", got)
	}
	if got := c.PolicyFor("plain"); got != def {
		t.Errorf("plain: %+v", got)
	}
	want := def
	want.ConsecutiveFailures, want.NoJitter = 9, false
	if got := c.PolicyFor("override"); got != want {
		t.Errorf("override: %+v, want %+v", got, want)
	}
	reg, err := registry.New(c.RegistryOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.PolicyFor("override"); got.OpenJitter != registry.DefaultOpenJitter || got.NoJitter {
		t.Errorf("override in the registry: jitter %v, no_jitter %v; want jitter back on", got.OpenJitter, got.NoJitter)
	}
}

// TestEffectivePolicy: cross-field rules are checked on the merged policy,
// not on the override alone.
func TestEffectivePolicy(t *testing.T) {
	// Valid alone (with registry defaults) but not with the inherited open_for.
	_, err := parse(t, "version: 1\ndefaults:\n  policy: {open_for: 10m}\ndependencies:\n  a:\n    policy: {max_open_for: 5m}\n", config.YAML)
	p := find(t, problems(t, err), "dependencies.a.policy.max_open_for")
	if want := "must be ≥ open_for (10m0s), got 5m0s (with fields inherited from defaults.policy)"; p.Message != want || p.Line != 6 {
		t.Errorf("got %v, want %q at line 6", p, want)
	}
	// Invalid alone (max_open_for 20s < the 30s registry default of
	// open_for) but valid with the inherited open_for.
	c := mustParse(t, "version: 1\ndefaults:\n  policy: {open_for: 5s}\ndependencies:\n  a:\n    policy: {max_open_for: 20s}\n", config.YAML)
	if _, err := registry.New(c.RegistryOptions()...); err != nil {
		t.Errorf("registry.New: %v", err)
	}
	// A problem of the override itself is reported once, under its path,
	// and a broken default is not reported again under every dependency.
	_, err = parse(t, "version: 1\ndefaults:\n  policy: {failure_rate: 3}\ndependencies:\n  a: {policy: {min_calls: -1}}\n  b: {policy: {}}\n", config.YAML)
	ps := problems(t, err)
	find(t, ps, "defaults.policy.failure_rate")
	find(t, ps, "dependencies.a.policy.min_calls")
	if len(ps) != 2 {
		t.Errorf("%d problems, want 2:\n%s", len(ps), list(ps))
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	y, j := readFile(t, "full.yaml"), readFile(t, "full.json")
	for name, data := range map[string][]byte{"a.yaml": y, "b.yml": y, "c.YAML": y, "d.json": j, "e.JSON": j} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(path); err != nil {
			t.Errorf("Load(%s): %v", name, err)
		}
	}
	// The extension decides the format: YAML in a .json file is not JSON.
	bad := filepath.Join(dir, "yaml-in.json")
	if err := os.WriteFile(bad, y, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(bad); err == nil || !strings.Contains(err.Error(), "invalid JSON") {
		t.Errorf("YAML in a .json file: %v", err)
	}

	for _, name := range []string{"conf.toml", "conf", "conf.yaml.bak"} {
		_, err := config.Load(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), "unknown extension") || !strings.Contains(err.Error(), "want .yaml, .yml or .json") {
			t.Errorf("Load(%s): %v", name, err)
		}
	}
	_, err := config.Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(filepath.Join(dir, "dir.yaml")); err == nil {
		t.Error("Load of a directory succeeded")
	}

	// An invalid file's error names the file and is a *config.Error.
	_, err = config.Load("testdata/invalid_many.yaml")
	var ce *config.Error
	if !errors.As(err, &ce) || ce.File != "testdata/invalid_many.yaml" {
		t.Errorf("Load error %T %v", err, err)
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]config.Format{"a.yaml": config.YAML, "a.YML": config.YAML, "dir.json/a.json": config.JSON} {
		if got, err := config.FormatOf(path); err != nil || got != want {
			t.Errorf("FormatOf(%s) = %v, %v", path, got, err)
		}
	}
	if config.YAML.String() != "YAML" || config.JSON.String() != "JSON" || config.Format(7).String() != "Format(7)" {
		t.Error("Format.String")
	}
	if _, err := config.Parse([]byte("{}"), config.Format(7)); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("Parse with format 7: %v", err)
	}
}

func TestMaxFileBytes(t *testing.T) {
	// Exactly at the limit is fine (a valid file padded with a comment or
	// whitespace).
	pad := func(src, fill string) []byte {
		b := []byte(src)
		for len(b) < config.MaxFileBytes {
			b = append(b, fill...)
		}
		return b[:config.MaxFileBytes]
	}
	if _, err := config.Parse(pad("version: 1\n#", "x"), config.YAML); err != nil {
		t.Errorf("YAML at the limit: %v", err)
	}
	if _, err := config.Parse(pad(`{"version": 1}`, " "), config.JSON); err != nil {
		t.Errorf("JSON at the limit: %v", err)
	}
	over := append(pad("version: 1\n#", "x"), 'x')
	_, err := config.Parse(over, config.YAML)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than the limit of %d bytes", config.MaxFileBytes)) {
		t.Errorf("over the limit: %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, append(over, make([]byte, 3<<20)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), "big.yaml: the file is larger than the limit") {
		t.Errorf("Load over the limit: %v", err)
	}
}

// TestHugeMapping: yaml.v3 checks duplicate keys in quadratic time; a
// mapping with more keys than any configuration needs is refused before.
func TestHugeMapping(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ndependencies:\n")
	for i := range 10_001 {
		fmt.Fprintf(&b, "  d%d: {}\n", i)
	}
	start := time.Now()
	_, err := parse(t, b.String(), config.YAML)
	p := find(t, problems(t, err), "dependencies")
	if !strings.Contains(p.Message, "more than 10000 keys") {
		t.Errorf("got %v", p)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		format    config.Format
		want      string
		line      int
	}{
		{"yaml empty", "", config.YAML, "the file is empty", 0},
		{"yaml comments only", "# nothing\n", config.YAML, "the file is empty", 0},
		{"yaml tab", "version: 1\ndefaults:\n\tturn_limit: 2\n", config.YAML, "invalid YAML: found character that cannot start any token", 3},
		{"yaml unclosed", "version: 1\ndependencies: {a: [x\n", config.YAML, "invalid YAML", 0},
		{"yaml two documents", "version: 1\n---\nversion: 1\n", config.YAML, "a second YAML document", 2},
		{"yaml duplicate key", "version: 1\nversion: 1\n", config.YAML, `duplicate key "version" (first at line 1)`, 2},
		{"json empty", " \n", config.JSON, "the file is empty", 0},
		{"json bad", "{\n  \"version\": 1 \"defaults\": {}}", config.JSON, "invalid JSON: invalid character '\"' after object key:value pair", 2},
		{"json truncated", `{"version": 1,`, config.JSON, "invalid JSON: unexpected end of file", 0},
		{"json trailing", "{\"version\": 1}\n{}", config.JSON, "unexpected data after the top-level JSON object", 2},
		{"json trailing brace", `{"version": 1}}`, config.JSON, "unexpected data after the top-level JSON object", 1},
		{"json array", `[]`, config.JSON, "want a mapping of field names to values, got a list", 1},
		{"json duplicate key", "{\"version\": 1,\n\"version\": 1}", config.JSON, `duplicate key "version" (first at line 1)`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src, tc.format)
			ps := problems(t, err)
			if !strings.HasPrefix(ps[0].Message, tc.want) || (tc.line != 0 && ps[0].Line != tc.line) {
				t.Errorf("got %v, want %q at line %d", ps[0], tc.want, tc.line)
			}
		})
	}
	// A byte order mark is ignored.
	mustParse(t, "\ufeffversion: 1\n", config.YAML)
	mustParse(t, "\ufeff{\"version\": 1}", config.JSON)
	// A trailing document separator is harmless.
	mustParse(t, "version: 1\n---\n", config.YAML)
	mustParse(t, "---\nversion: 1\n...\n", config.YAML)
}

func TestValidate(t *testing.T) {
	var c config.File
	err := c.Validate()
	if p := find(t, problems(t, err), "version"); p.Message != "required; must be 1" || p.Line != 0 {
		t.Errorf("got %v", p)
	}
	c.Version = 1
	if err := c.Validate(); err != nil {
		t.Errorf("minimal file: %v (%T)", err, err)
	}
	// No typed nil: a valid file's error compares equal to nil.
	if err := c.Validate(); err != nil {
		t.Error("typed nil")
	}
	if _, err := parse(t, "version: 1\n", config.YAML); err != nil {
		t.Errorf("minimal YAML: %v", err)
	}
	if _, err := parse(t, `{"version": 1}`, config.JSON); err != nil {
		t.Errorf("minimal JSON: %v", err)
	}
}

func TestModels(t *testing.T) {
	head := "version: 1\nmodels:\n  chat:\n    endpoints:\n"
	for _, tc := range []struct{ name, eps, path, want string }{
		{"no model", "      - backend: gemini_api\n", "models.chat.endpoints[0].model", "required"},
		{"no backend", "      - model: m\n", "models.chat.endpoints[0].backend", "required"},
		{"bad base_url", "      - {model: m, backend: gemini_api, base_url: \"ftp://x\"}\n", "models.chat.endpoints[0].base_url", "http"},
		{"negative timeout", "      - {model: m, backend: gemini_api, timeout: -1s}\n", "models.chat.endpoints[0].timeout", "must be ≥ 0"},
		{"bad policy", "      - {model: m, backend: gemini_api, policy: {open_jitter: 2}}\n", "models.chat.endpoints[0].policy.open_jitter", "must be in [0, 1], got 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, head+tc.eps, config.YAML)
			if p := find(t, problems(t, err), tc.path); !strings.Contains(p.Message, tc.want) {
				t.Errorf("got %v, want %q", p, tc.want)
			}
		})
	}
	// One model in two regions is two endpoints.
	mustParse(t, head+"      - {model: m, backend: vertex_ai, location: us-central1}\n      - {model: m, backend: vertex_ai, location: europe-west4}\n", config.YAML)
}

// TestSchemaTags: the JSON and YAML names of every field agree (the JSON
// checker reads the yaml tags).
func TestSchemaTags(t *testing.T) {
	for _, v := range []any{config.File{}, config.Defaults{}, config.Dependency{}, config.Policy{}, config.ModelChain{}, config.ModelEndpoint{},
		config.MCPServer{}, config.MCPRetry{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if j != y || j == "" {
				t.Errorf("%s.%s: json %q, yaml %q", rt.Name(), f.Name, j, y)
			}
		}
	}
	// config.Policy has every field of registry.Policy, by the same name.
	cp, rp := reflect.TypeFor[config.Policy](), reflect.TypeFor[registry.Policy]()
	if cp.NumField() != rp.NumField() {
		t.Fatalf("config.Policy has %d fields, registry.Policy %d", cp.NumField(), rp.NumField())
	}
	for i := range rp.NumField() {
		f, ok := cp.FieldByName(rp.Field(i).Name)
		if !ok || f.Tag.Get("yaml") != rp.Field(i).Tag.Get("yaml") {
			t.Errorf("registry.Policy.%s has no twin in config.Policy", rp.Field(i).Name)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	one := &config.Error{Problems: []config.Problem{{Path: "version", Line: 1, Message: "must be 1, got 2"}}}
	if got, want := one.Error(), "config: version: must be 1, got 2 (line 1)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	two := &config.Error{File: "agent.yaml", Problems: []config.Problem{
		{Path: "version", Line: 1, Message: "must be 1, got 2"},
		{Path: "defaults.turn_limit", Line: 4, Column: 15, Message: "want an integer, got the string \"x\""},
		{Message: "the file is empty"},
	}}
	want := "config agent.yaml: 3 problems:\n" +
		"  version: must be 1, got 2 (line 1)\n" +
		"  defaults.turn_limit: want an integer, got the string \"x\" (line 4, column 15)\n" +
		"  the file is empty"
	if got := two.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestPathsQuoteOddKeys: keys with dots or spaces are quoted in paths, so a
// path names one field.
func TestPathsQuoteOddKeys(t *testing.T) {
	_, err := parse(t, "version: 1\ndependencies:\n  api.v2:\n    policy: {open_for: -1s}\n", config.YAML)
	p := find(t, problems(t, err), `dependencies."api.v2".policy.open_for`)
	if p.Line != 4 {
		t.Errorf("got %v, want line 4", p)
	}
}

// TestTurnBudgetFields: the turn budget's two keys parse in both formats and
// their problems are reported together, by path.
func TestTurnBudgetFields(t *testing.T) {
	for _, tc := range []struct {
		src    string
		format config.Format
	}{
		{"version: 1\ndefaults:\n  max_model_calls: 8\n  max_turn_duration: 90s\n", config.YAML},
		{`{"version": 1, "defaults": {"max_model_calls": 8, "max_turn_duration": 90}}`, config.JSON},
	} {
		f, err := config.Parse([]byte(tc.src), tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if d := f.Defaults; d.MaxModelCalls != 8 || time.Duration(d.MaxTurnDuration) != 90*time.Second {
			t.Fatalf("%s: %d, %s", tc.format, d.MaxModelCalls, d.MaxTurnDuration)
		}
	}
	for _, tc := range []struct {
		src    string
		format config.Format
	}{
		{"version: 1\ndefaults:\n  max_model_calls: -1\n  max_turn_duration: -2s\n  turn_limit: -1\n  max_turn_tokens: -5\n", config.YAML},
		{`{"version": 1, "defaults": {"max_model_calls": -1, "max_turn_duration": "-2s", "turn_limit": -1, "max_turn_tokens": -5}}`, config.JSON},
	} {
		_, err := config.Parse([]byte(tc.src), tc.format)
		ps := problems(t, err)
		for path, msg := range map[string]string{
			"defaults.max_model_calls":   "must be ≥ 0, got -1",
			"defaults.max_turn_duration": "must be ≥ 0, got -2s",
			"defaults.turn_limit":        "must be ≥ 0, got -1",
			"defaults.max_turn_tokens":   "must be ≥ 0, got -5",
		} {
			if p := find(t, ps, path); !strings.Contains(p.Message, msg) {
				t.Errorf("%s %s: %q, want %q", tc.format, path, p.Message, msg)
			}
		}
		if len(ps) != 4 {
			t.Errorf("%s: %d problems, want 4:\n%s", tc.format, len(ps), list(ps))
		}
	}
}

// TestToolNoteKey: defaults.tool_note is a file key (the option
// WithToolNote's), in YAML and JSON alike, and a non-boolean is refused.
func TestToolNoteKey(t *testing.T) {
	for _, tc := range []struct {
		src    string
		format config.Format
	}{
		{"version: 1\ndefaults:\n  tool_note: true\n", config.YAML},
		{`{"version": 1, "defaults": {"tool_note": true}}`, config.JSON},
	} {
		f, err := config.Parse([]byte(tc.src), tc.format)
		if err != nil || !f.Defaults.ToolNote {
			t.Errorf("%s: ToolNote = %v, err %v; want true", tc.src, f != nil && f.Defaults.ToolNote, err)
		}
	}
	if _, err := config.Parse([]byte("version: 1\ndefaults:\n  tool_note: 3\n"), config.YAML); err == nil || !strings.Contains(err.Error(), "defaults.tool_note") {
		t.Errorf("tool_note: 3: %v, want an error naming defaults.tool_note", err)
	}
}
