package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestTripOnRetryHintKeys(t *testing.T) {
	f := mustParse(t, "version: 1\ndefaults:\n  policy:\n    no_trip_on_retry_hint: true\ndependencies:\n  api:\n    tools: [a]\n    policy:\n      trip_on_retry_hint: true\n      retry_hint_failures: 4\n  other:\n    tools: [b]\n    policy: {consecutive_failures: 3}\n", config.YAML)
	if p := f.PolicyFor("api"); !p.TripsOnRetryHint() || p.RetryHintFailures != 4 {
		t.Errorf("api: trips=%v retry_hint_failures=%d, want its own true and 4", p.TripsOnRetryHint(), p.RetryHintFailures)
	}
	if p := f.PolicyFor("other"); p.TripsOnRetryHint() {
		t.Error("other: inherits no_trip_on_retry_hint from the defaults, want false")
	}
	if p := mustParse(t, "version: 1\ndependencies:\n  api:\n    tools: [a]\n", config.YAML).PolicyFor("api"); p.TripsOnRetryHint() {
		t.Error("a policy that sets neither key trips on a retry hint: the default is false")
	}
	// Only trip_on_retry_hint: true turns tripping on. The older spelling's
	// false (its default) clears an inherited no_trip_on_retry_hint and
	// leaves an inherited trip_on_retry_hint as it is.
	off, on := false, true
	for _, tc := range []struct {
		base registry.Policy
		p    config.Policy
		want bool
	}{
		{registry.Policy{TripOnRetryHint: &off}, config.Policy{TripOnRetryHint: &on}, true},
		{registry.Policy{TripOnRetryHint: &off}, config.Policy{NoTripOnRetryHint: &off}, false},
		{registry.Policy{}, config.Policy{NoTripOnRetryHint: &off}, false},
		{registry.Policy{NoTripOnRetryHint: true}, config.Policy{NoTripOnRetryHint: &off}, false},
		{registry.Policy{TripOnRetryHint: &on}, config.Policy{NoTripOnRetryHint: &off}, true},
		{registry.Policy{TripOnRetryHint: &on}, config.Policy{NoTripOnRetryHint: &on}, false},
		{registry.Policy{TripOnRetryHint: &on}, config.Policy{TripOnRetryHint: &off}, false},
		{registry.Policy{TripOnRetryHint: &on}, config.Policy{}, true},
		{registry.Policy{TripOnRetryHint: &off}, config.Policy{}, false},
	} {
		if got := tc.p.Apply(tc.base); got.TripsOnRetryHint() != tc.want || got.Validate() != nil {
			t.Errorf("%+v applied to %+v: trips=%v validate=%v, want trips=%v", tc.p, tc.base, got.TripsOnRetryHint(), got.Validate(), tc.want)
		}
	}
	_, err := config.Parse([]byte("version: 1\ndependencies:\n  api:\n    tools: [a]\n    policy: {trip_on_retry_hint: true, no_trip_on_retry_hint: true, retry_hint_failures: 2000}\n"), config.YAML)
	if err == nil || !strings.Contains(err.Error(), "no_trip_on_retry_hint") || !strings.Contains(err.Error(), "retry_hint_failures") {
		t.Errorf("contradicting keys: %v, want both problems", err)
	}
}

func TestModelEndpointThrottle(t *testing.T) {
	f := mustParse(t, `version: 1
models:
  assistant:
    endpoints:
      - {model: a, backend: gemini_api, throttle: {k: 1.5, window: 45s, max_reject_probability: 0.8}}
      - {model: b, backend: gemini_api}
`, config.YAML)
	th := f.Models["assistant"].Endpoints[0].Throttle
	if th == nil || th.K != 1.5 || time.Duration(th.Window) != 45*time.Second || th.MaxRejectProbability != 0.8 {
		t.Fatalf("throttle = %+v", th)
	}
	_, err := config.Parse([]byte(`version: 1
models:
  assistant:
    endpoints:
      - {model: a, backend: gemini_api, throttle: {k: 1, window: 2h, max_reject_probability: 1.5}}
      - {model: b, backend: gemini_api, throttle: {}}
`), config.YAML)
	for _, want := range []string{"endpoints[0].throttle.k", "endpoints[0].throttle.window", "endpoints[0].throttle.max_reject_probability", "endpoints[1].throttle"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v, want %q", err, want)
		}
	}
}
