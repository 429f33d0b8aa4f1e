package incident

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestRecoveryOrderings runs the recovery study (-scenario recovery) on
// every 7th second of outage length instead of every second (every 14th
// under -race: about 6 s of CPU), for the
// configurations docs/incident.md compares, and checks what it publishes,
// not the numbers:
//
//   - every breaker keeps its promise: a call gets through within its
//     longest hold (plus one call interval) of the dependency's return —
//     60 s for gobreaker's and NeMo-style's fixed holds and for the old
//     1-minute cap, registry.DefaultMaxOpenFor for the defaults;
//   - the defaults send fewer calls to the dead dependency than the old cap,
//     gobreaker's defaults and the NeMo-style breaker, over all lengths and
//     in the 9-minute outage of the baselines' table;
//   - and pay for it in recovery: a longer mean than any of the three;
//   - for outages of 1 to 3 minutes, the NeMo-style breaker (3 consecutive
//     failures) still sends fewer calls than the defaults (5).
//
// It drives the breakers directly on a fake clock, so it runs under -race
// too.
func TestRecoveryOrderings(t *testing.T) {
	step := 7 * time.Second
	if raceEnabled {
		step *= 2
	}
	var configs []RecoveryConfig
	for _, c := range RecoveryConfigs {
		switch c.Name {
		case NameGobreaker, NameNemo, NameDefaults, recoveryOldCap:
			configs = append(configs, c)
		}
	}
	if len(configs) != 4 {
		t.Fatalf("%d of the 4 configurations in RecoveryConfigs", len(configs))
	}
	r, err := RunRecovery(step, configs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	ReportRecovery(&b, r, step)
	t.Log("\n" + b.String())

	limits := map[string]time.Duration{
		NameGobreaker: time.Minute, NameNemo: time.Minute, recoveryOldCap: time.Minute,
		NameDefaults: registry.DefaultMaxOpenFor,
	}
	for name, limit := range limits {
		if s := r.All(name); s.RecoveryWorst > limit+TurnEvery {
			t.Errorf("%s: recovered in %s after a %s outage, want ≤ %s", name, s.RecoveryWorst, s.OutageWorst, limit+TurnEvery)
		}
	}
	d, d9 := r.All(NameDefaults), r.At(NameDefaults, 9*time.Minute)
	for _, name := range []string{recoveryOldCap, NameGobreaker, NameNemo} {
		s, s9 := r.All(name), r.At(name, 9*time.Minute)
		if d.DeadMean >= s.DeadMean {
			t.Errorf("defaults: %.1f calls to the dead dependency per outage, %s %.1f", d.DeadMean, name, s.DeadMean)
		}
		if d9.DeadMax >= s9.DeadMax {
			t.Errorf("defaults: %d calls in the 9-minute outage, %s %d", d9.DeadMax, name, s9.DeadMax)
		}
		if d.RecoveryMean <= s.RecoveryMean {
			t.Errorf("defaults: mean recovery %s, %s %s: the cost docs/incident.md states is gone (update the docs)", d.RecoveryMean, name, s.RecoveryMean)
		}
	}
	short := recoveryBuckets[0]
	if n, ds := r.Stats(NameNemo, short[0], short[1]), r.Stats(NameDefaults, short[0], short[1]); n.DeadMean >= ds.DeadMean {
		t.Errorf("outages of %s to %s: nemo-style %.1f calls, defaults %.1f: the crossing docs/incident.md describes moved (update the docs)",
			short[0], short[1], n.DeadMean, ds.DeadMean)
	}
}

// fmtMin drops only zero units: a duration ending in a ten-second multiple
// keeps its seconds (it printed 3m10s as "3m1").
func TestFmtMin(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{10 * time.Second, "10s"},
		{time.Minute, "1m"},
		{time.Minute + time.Second, "1m1s"},
		{3*time.Minute + 5*time.Second, "3m5s"},
		{3*time.Minute + 10*time.Second, "3m10s"},
		{20 * time.Minute, "20m"},
		{time.Hour, "1h"},
		{time.Hour + 10*time.Minute, "1h10m"},
		{time.Hour + 30*time.Second, "1h0m30s"},
	} {
		if got := fmtMin(tc.d); got != tc.want {
			t.Errorf("fmtMin(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
