package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// incidentYAML is the enrichment dependency of the reference incident (docs/incident.md): 50% over a
// 20-call window, 30s cool-down, 5s timeout, bulkhead of 20, and the
// consecutive gate off.
const incidentYAML = `
version: 1
dependencies:
  enrichment:
    tools: [enrich]
    policy:
      failure_rate: 0.5
      count_window: 20
      disable_consecutive_failures: true
      open_for: 30s
      call_timeout: 5s
      max_concurrent: 20
      queue_wait: 50ms
      slow_in_flight: 1s
      slow_in_flight_calls: 3
`

const incidentJSON = `{"version": 1, "dependencies": {"enrichment": {"tools": ["enrich"], "policy": {
  "failure_rate": 0.5, "count_window": 20, "disable_consecutive_failures": true, "open_for": "30s",
  "call_timeout": 5, "max_concurrent": 20, "queue_wait": "50ms", "slow_in_flight": "1s", "slow_in_flight_calls": 3}}}}`

func TestContainmentKeys(t *testing.T) {
	want := registry.Policy{
		FailureRate: 0.5, CountWindow: 20, DisableConsecutiveFailures: true, OpenFor: 30 * time.Second,
		CallTimeout: 5 * time.Second, MaxConcurrent: 20, QueueWait: 50 * time.Millisecond,
		SlowInFlight: time.Second, SlowInFlightCalls: 3,
	}
	for _, tc := range []struct {
		src string
		f   config.Format
	}{{incidentYAML, config.YAML}, {incidentJSON, config.JSON}} {
		f := mustParse(t, tc.src, tc.f)
		if got := f.PolicyFor("enrichment"); got != want {
			t.Errorf("%s: policy =\n%+v, want\n%+v", tc.f, got, want)
		}
	}
	// A dependency can switch off what the defaults switch on.
	f := mustParse(t, `
version: 1
defaults: {policy: {disable_slow_in_flight: true, disable_consecutive_failures: true}}
dependencies:
  a: {policy: {disable_slow_in_flight: false, disable_consecutive_failures: false}}
`, config.YAML)
	if p := f.PolicyFor("a"); p.DisableSlowInFlight || p.DisableConsecutiveFailures {
		t.Errorf("switches not turned off: %+v", p)
	}
	if p := f.PolicyFor("b"); !p.DisableSlowInFlight || !p.DisableConsecutiveFailures {
		t.Errorf("defaults' switches not inherited: %+v", p)
	}
}

// Every problem with the new keys is reported at once, by path.
func TestContainmentKeysInvalid(t *testing.T) {
	_, err := parse(t, `
version: 1
defaults:
  policy:
    count_window: -1
    max_concurrent: -2
    queue_wait: 2m
    slow_in_flight_factor: 0.5
    slow_in_flight: 10s
    call_timeout: 5s
    disable_consecutive_failures: true
    disable_failure_rate: true
    max_concurrnt: 3
`, config.YAML)
	ps := problems(t, err)
	for _, path := range []string{
		"defaults.policy.count_window", "defaults.policy.max_concurrent", "defaults.policy.queue_wait",
		"defaults.policy.slow_in_flight_factor", "defaults.policy.slow_in_flight",
		"defaults.policy.disable_consecutive_failures", "defaults.policy.max_concurrnt",
	} {
		find(t, ps, path)
	}
	if p := find(t, ps, "defaults.policy.max_concurrnt"); !strings.Contains(p.Message, "max_concurrent") {
		t.Errorf("no suggestion for a misspelt key: %v", p)
	}
}

// TestDocsListEveryPolicyKey: every policy key has a row in the policy table
// of docs/configuration.md.
func TestDocsListEveryPolicyKey(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	rt := reflect.TypeFor[config.Policy]()
	for i := range rt.NumField() {
		key, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		if !strings.Contains(string(b), "| `"+key+"` |") {
			t.Errorf("policy key %s is missing from the policy table of %s", key, docPath)
		}
	}
}
