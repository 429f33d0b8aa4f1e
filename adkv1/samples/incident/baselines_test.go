//go:build !race

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/incident"
)

// reducedBaselines is -scenario baselines at about a quarter of its
// traffic (a turn every 400 ms, and every 2 s through the chain) and a
// tenth of its false-trip benchmark.
var reducedBaselines = incident.BaselineSize{Every: 400 * time.Millisecond, ChainEvery: 2 * time.Second, TailCalls: 100_000}

// TestBaselinesOrdering runs the baselines table on the reduced size,
// without the no-breaker and retryandreflect rows (they send every call
// and cost most of the run's time), and checks the orderings that
// docs/incident.md publishes, not their numbers:
//
//   - no configuration with a breaker trips on the healthy-tail benchmark;
//   - in every scenario (fast, hang, chain fast, chain hang) adkbreaker with
//     the library's defaults sends the fewest calls to the dead dependency,
//     strictly, and spends the fewest tokens per outage turn — strictly
//     fewer than gobreaker's defaults and the NeMo-style breaker; adkbreaker
//     with the incident's settings, whose model is told the same payload,
//     may tie it on tokens;
//   - the NeMo-style breaker (3 consecutive failures) trips on the flaky
//     benchmark; adkbreaker's defaults, the incident's settings and
//     gobreaker's defaults do not.
func TestBaselinesOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 15 simulated minutes sixteen times")
	}
	r, err := runBaselines(reducedBaselines, baselines[2:])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	incident.ReportBaselines(&b, r)
	t.Log("\n" + b.String())
	for _, c := range r.Configs {
		if n := r.Trips(c.Name); n != 0 {
			t.Errorf("%s: %d false trips on the healthy-tail benchmark", c.Name, n)
		}
	}
	for i, sc := range incident.BaselineScenarios {
		d := r.Row(i, incident.NameDefaults)
		for _, c := range r.Configs {
			if c.Name == incident.NameDefaults {
				continue
			}
			w := r.Row(i, c.Name)
			if w.DeadCalls <= d.DeadCalls {
				t.Errorf("%s: %s sends %d calls to the dead dependency, adkbreaker-defaults %d (want strictly more)", sc.Name, c.Name, w.DeadCalls, d.DeadCalls)
			}
			tieAllowed := c.Name == incident.NameIncident
			if w.TokensPerTurnMean < d.TokensPerTurnMean || !tieAllowed && w.TokensPerTurnMean == d.TokensPerTurnMean {
				t.Errorf("%s: %s spends %.0f tokens per outage turn, adkbreaker-defaults %.0f", sc.Name, c.Name, w.TokensPerTurnMean, d.TokensPerTurnMean)
			}
		}
	}
	if n := r.Flaky(incident.NameNemo); n == 0 {
		t.Errorf("nemo-style never tripped on the flaky benchmark (%d%% errors)", int(100*incident.FlakyErrorRate))
	}
	for _, name := range []string{incident.NameDefaults, incident.NameIncident, incident.NameGobreaker} {
		if n := r.Flaky(name); n != 0 {
			t.Errorf("%s: %d false trips on the flaky benchmark", name, n)
		}
	}
}
