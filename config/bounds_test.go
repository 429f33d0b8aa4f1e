package config_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// max_breakers near the integer limit once overflowed the plugin's binding
// cache size and silently turned off the binding cache and last_good.
func TestMaxBreakersRange(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "4611686018427387904", "1048577"} {
		_, err := parse(t, "version: 1\ndefaults:\n  max_breakers: "+v+"\n", config.YAML)
		p := find(t, problems(t, err), "defaults.max_breakers")
		if !strings.Contains(p.Message, "must be in [0, 1048576]") {
			t.Errorf("max_breakers %s: %q", v, p.Message)
		}
	}
	mustParse(t, "version: 1\ndefaults:\n  max_breakers: 1048576\n", config.YAML)
}

func TestCallTimeoutAndRetryHintSwitch(t *testing.T) {
	f := mustParse(t, "version: 1\ndefaults:\n  policy:\n    call_timeout: 5s\n    no_trip_on_retry_hint: true\ndependencies:\n  api:\n    tools: [a]\n    policy:\n      no_trip_on_retry_hint: false\n", config.YAML)
	if p := f.Defaults.Policy.Registry(); p.CallTimeout.String() != "5s" || !p.NoTripOnRetryHint {
		t.Fatalf("defaults policy = %+v", p)
	}
	if p := f.PolicyFor("api"); p.NoTripOnRetryHint || p.CallTimeout.String() != "5s" {
		t.Fatalf("api policy = %+v: want call_timeout inherited and no_trip_on_retry_hint turned off", p)
	}
	_, err := parse(t, "version: 1\ndefaults:\n  policy:\n    call_timeout: -1s\ndependencies:\n  api:\n    tools: [a]\n    policy:\n      call_timeout: 90s\n", config.YAML)
	ps := problems(t, err)
	find(t, ps, "defaults.policy.call_timeout")
	if p := find(t, ps, "dependencies.api.policy.probe_lease"); !strings.Contains(p.Message, "call_timeout") {
		t.Errorf("probe_lease problem: %q", p.Message)
	}
}
