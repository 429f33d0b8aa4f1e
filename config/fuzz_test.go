package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Seeds shared by both fuzzers (YAML is a superset of most JSON).
var fuzzSeeds = []string{
	"",
	"version: 1\n",
	`{"version": 1}`,
	"version: 1\ndefaults:\n  policy:\n    open_for: 1m30s\n    max_open_for: 90\n",
	"version: 1\ndependencies:\n  a: {tools: [x, \"y_*\"], alternatives: [z], cache_last_good: true, policy: {consecutive_failures: 2, no_jitter: false}}\n",
	"version: 1\ndefaults: {policy: {open_for: 10m}}\ndependencies: {a: {policy: {max_open_for: 5m}}}\n",
	"version: 1\ndefaults: {max_breakers: 1}\ndependencies: {a: {policy: {}}, b: {policy: {}}}\n",
	"version: 1\nmodels:\n  chat:\n    endpoints:\n      - {model: m, backend: gemini_api, timeout: 30s}\n      - {model: m, backend: vertex_ai, location: eu}\n",
	"version: 1\ndefaults: {policy: {window: 1e300, probe_lease: .nan, slow_call: -1}}\n",
	"a: &a [*a]\n",
	"version: 1\nversion: 2\n",
	`{"version": 1, "dependencies": {"a": {"tools": ["x"]}, "a": {}}}`,
	`{"version": 1, "defaults": {"policy": {"open_for": 1e999, "window": "-0s"}}}`,
	`{"Version": 1, "defaults": {"turn_limit": 9223372036854775808}}`,
	"version: 1\ndefaults:\n  max_model_calls: 0.9\n  tool_repeat_limits: {poll: -1.5}\n  remove_unavailable: yes\n",
	"version: 1\nbase: &b {tools: [1, 2024-01-01]}\ndependencies: {a: *b, c: {<<: *b, repeat_limit: 2.0}}\n",
	"version: 1\nmodels: {a: {endpoints: [{model: m, backend: gemini_api, throttle: {k: .inf}}, {model: n, backend: gemini_api}]}}\n",
}

func addSeeds(f *testing.F, fixtures ...string) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, name := range fixtures {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkParsed holds a successfully parsed File to its promises: it is valid,
// every effective policy is valid, the registry accepts it, and it survives
// marshaling back to the format and parsing again.
func checkParsed(t *testing.T, c *config.File, format config.Format) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("Parse succeeded but Validate fails: %v", err)
	}
	if err := c.Defaults.Policy.Registry().Validate(); err != nil {
		t.Fatalf("defaults.policy invalid: %v", err)
	}
	for name := range c.Dependencies {
		if err := c.PolicyFor(name).Validate(); err != nil {
			t.Fatalf("PolicyFor(%q) invalid: %v", name, err)
		}
	}
	reg, err := registry.New(c.RegistryOptions()...)
	if err != nil {
		t.Fatalf("registry.New(RegistryOptions()) fails: %v", err)
	}
	for name := range c.Dependencies {
		if got, want := reg.PolicyFor(registry.Key(name)), c.PolicyFor(name).WithDefaults(); got != want {
			t.Fatalf("registry policy of %q = %+v, want %+v", name, got, want)
		}
	}
	want, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	if format == config.YAML {
		out, err = yaml.Marshal(c)
	} else {
		out = want
	}
	if err != nil {
		t.Fatal(err)
	}
	back, err := config.Parse(out, format)
	if err != nil {
		t.Fatalf("marshaled file does not parse: %v\n%s", err, out)
	}
	if got, _ := json.Marshal(back); !bytes.Equal(got, want) {
		t.Fatalf("round trip changed the file:\n got %s\nwant %s", got, want)
	}
}

func FuzzParseYAML(f *testing.F) {
	addSeeds(f, "full.yaml", "invalid_many.yaml", "example.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, config.YAML)
		if err != nil {
			if c != nil {
				t.Fatal("a File and an error")
			}
			return
		}
		checkParsed(t, c, config.YAML)
		// YAML is never more lenient than JSON: the same document written
		// as JSON parses too, to the same file.
		var generic any
		if yaml.Unmarshal(data, &generic) != nil {
			t.Fatal("Parse accepted what yaml.Unmarshal refuses")
		}
		asJSON, err := json.Marshal(generic)
		if err != nil {
			return // a mapping key that is not a string: JSON cannot write it
		}
		cj, err := config.Parse(asJSON, config.JSON)
		if err != nil {
			t.Fatalf("YAML accepted, the same document as JSON refused: %v\n%s", err, asJSON)
		}
		a, _ := json.Marshal(c)
		b, _ := json.Marshal(cj)
		if !bytes.Equal(a, b) {
			t.Fatalf("YAML and JSON read the same document differently:\n%s\n%s", a, b)
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	addSeeds(f, "full.json", "invalid_many.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, config.JSON)
		if err != nil {
			if c != nil {
				t.Fatal("a File and an error")
			}
			return
		}
		checkParsed(t, c, config.JSON)
		// The schema checker is never more lenient than encoding/json in
		// strict mode, and both read the same values.
		var std config.File
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("Parse accepted what encoding/json refuses: %v", err)
		}
		a, _ := json.Marshal(c)
		b, _ := json.Marshal(&std)
		if !bytes.Equal(a, b) {
			t.Fatalf("Parse and encoding/json disagree:\n%s\n%s", a, b)
		}
	})
}
