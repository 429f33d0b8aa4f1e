package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// TestYAMLIntegersAreStrict: a fraction written into an integer field is
// refused, with its field path, as JSON refuses it — yaml.v3 alone
// truncates it (max_model_calls 0.9 became 0, turning the budget off, and
// tool_repeat_limits poll -1.5 became -1, turning the guard off). Every
// problem is listed at once.
func TestYAMLIntegersAreStrict(t *testing.T) {
	src := `version: 1
defaults:
  max_model_calls: 0.9
  turn_limit: 0.5
  short_circuit_limit: 1e0
  repeat_limit: 2.5
  tool_repeat_limits: {poll: -1.5}
  max_breakers: !!float 64
  policy: {retry_hint_failures: 2.5, consecutive_failures: 3.0}
dependencies:
  api:
    tools: [a]
    repeat_limit: 4.5
mcp_servers:
  files:
    url: http://127.0.0.1:1/mcp
    max_tools: 10.5
fleet: {address: "127.0.0.1:6379", db: 1.5}
`
	want := []string{
		"defaults.max_model_calls: want an integer, got the number 0.9 (line 3, column 20)",
		"defaults.turn_limit: want an integer, got the number 0.5 (line 4",
		"defaults.short_circuit_limit: want an integer, got the number 1e0 (line 5",
		"defaults.repeat_limit: want an integer, got the number 2.5 (line 6",
		"defaults.tool_repeat_limits.poll: want an integer, got the number -1.5 (line 7",
		"defaults.max_breakers: want an integer, got the number 64 (line 8",
		"defaults.policy.retry_hint_failures: want an integer, got the number 2.5 (line 9",
		"defaults.policy.consecutive_failures: want an integer, got the number 3.0 (line 9",
		"dependencies.api.repeat_limit: want an integer, got the number 4.5 (line 13",
		"mcp_servers.files.max_tools: want an integer, got the number 10.5 (line 17",
		"fleet.db: want an integer, got the number 1.5 (line 18",
	}
	_, err := config.Parse([]byte(src), config.YAML)
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Parse = %v, want a *config.Error", err)
	}
	if len(cfgErr.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(cfgErr.Problems), len(want), err)
	}
	for i, w := range want {
		if i < len(cfgErr.Problems) && !strings.HasPrefix(cfgErr.Problems[i].String(), w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, cfgErr.Problems[i], w)
		}
	}
	// Integers YAML writes another way are integers, and null is unset.
	f := mustParse(t, "version: 1\ndefaults:\n  max_model_calls: 0x10\n  turn_limit: ~\n  repeat_limit: +4\n", config.YAML)
	if f.Defaults.MaxModelCalls != 16 || f.Defaults.TurnLimit != 0 || f.Defaults.RepeatLimit != 4 {
		t.Errorf("defaults = %+v, want max_model_calls 16, turn_limit unset, repeat_limit 4", f.Defaults)
	}
}

// TestYAMLIsAsStrictAsJSON: every value JSON refuses for a field's type and
// yaml.v3 alone would take is refused in YAML too, at the same field path:
// integers with fractions, infinities and NaN in number fields, numbers,
// booleans and timestamps in string fields, YAML 1.1's yes and no in
// boolean fields, through aliases and merge keys; and a list where a
// mapping is due in a flow mapping on one line ("throttle: [1.2]") names
// its field, not the list it is in.
func TestYAMLIsAsStrictAsJSON(t *testing.T) {
	tests := []struct{ name, yaml, json, path, msg string }{
		{"fraction in an int", "version: 1\ndefaults: {turn_limit: 0.5}\n", `{"version": 1, "defaults": {"turn_limit": 0.5}}`,
			"defaults.turn_limit", "want an integer"},
		{"version 1.0", "version: 1.0\n", `{"version": 1.0}`, "version", "want an integer"},
		{"infinity", "version: 1\ndefaults: {policy: {open_backoff: .inf}}\n", `{"version": 1, "defaults": {"policy": {"open_backoff": "inf"}}}`,
			"defaults.policy.open_backoff", "want a number"},
		{"nan in throttle k", "version: 1\nmodels: {a: {endpoints: [{model: m, backend: gemini_api, throttle: {k: .nan}}, {model: n, backend: gemini_api}]}}\n",
			`{"version": 1, "models": {"a": {"endpoints": [{"model": "m", "backend": "gemini_api", "throttle": {"k": "nan"}}, {"model": "n", "backend": "gemini_api"}]}}}`,
			"models.a.endpoints[0].throttle.k", "want a number"},
		{"throttle as a list", "version: 1\nmodels:\n  a:\n    endpoints:\n      - {model: a, backend: gemini_api, throttle: [1.2]}\n      - {model: b, backend: gemini_api}\n",
			`{"version": 1, "models": {"a": {"endpoints": [{"model": "a", "backend": "gemini_api", "throttle": [1.2]}, {"model": "b", "backend": "gemini_api"}]}}}`,
			"models.a.endpoints[0].throttle", "want a mapping of field names to values, got a list"},
		{"integer tool name", "version: 1\ndependencies: {a: {tools: [x, 42]}}\n", `{"version": 1, "dependencies": {"a": {"tools": ["x", 42]}}}`,
			"dependencies.a.tools[1]", "want a string"},
		{"boolean model", "version: 1\nmodels: {a: {endpoints: [{model: true, backend: gemini_api}]}}\n",
			`{"version": 1, "models": {"a": {"endpoints": [{"model": true, "backend": "gemini_api"}]}}}`,
			"models.a.endpoints[0].model", "want a string"},
		{"timestamp alternative", "version: 1\ndependencies: {a: {alternatives: [2024-01-01]}}\n", `{"version": 1, "dependencies": {"a": {"alternatives": [20240101]}}}`,
			"dependencies.a.alternatives[0]", "want a string"},
		{"yes as a boolean", "version: 1\ndefaults: {remove_unavailable: yes}\n", `{"version": 1, "defaults": {"remove_unavailable": "yes"}}`,
			"defaults.remove_unavailable", "want true or false"},
		{"through an alias", "version: 1\nx: &half 0.5\ndefaults: {turn_limit: *half}\n", `{"version": 1, "defaults": {"turn_limit": 0.5}}`,
			"defaults.turn_limit", "want an integer"},
		{"through a merge key", "version: 1\ndefaults:\n  policy: &p {min_calls: 2.5}\ndependencies: {a: {policy: {<<: *p}}}\n",
			`{"version": 1, "defaults": {"policy": {"min_calls": 2.5}}, "dependencies": {"a": {"policy": {"min_calls": 2.5}}}}`,
			"defaults.policy.min_calls", "want an integer"}, // reported where it is written
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				format config.Format
				src    string
			}{{config.YAML, tt.yaml}, {config.JSON, tt.json}} {
				_, err := config.Parse([]byte(c.src), c.format)
				if err == nil {
					t.Errorf("%s: Parse accepted it", c.format)
					continue
				}
				if !strings.Contains(err.Error(), tt.path+": "+tt.msg) {
					t.Errorf("%s: Parse = %v, want %q", c.format, err, tt.path+": "+tt.msg)
				}
			}
		})
	}
}
