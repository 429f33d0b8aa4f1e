package registry_test

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestLongTailSweep measures how often the default in-flight slowness
// detector trips a healthy log-normal dependency (median 200 ms) over ten
// simulated hours per row; the table in docs/design.md ("A hang, not a
// tail") comes from it. It is a measurement, not an assertion
// (TestLongTailIsNotAHang asserts), and runs only with SWEEP=1:
//
//	SWEEP=1 go test -run TestLongTailSweep -v ./registry/
func TestLongTailSweep(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip("set SWEEP=1 to measure")
	}
	for _, sigma := range []float64{0.8, 1.2, 1.6} {
		for _, perSecond := range []int{5, 20, 50} {
			trips := 0
			for seed := range 10 { // ten one-hour runs
				clk, r, b := newBreaker(t, registry.Policy{})
				rec := record(t, r)
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(perSecond)))
				lognormal := func() time.Duration {
					return time.Duration(float64(200*time.Millisecond) * math.Exp(sigma*rng.NormFloat64()))
				}
				replayLatencies(t, b, func(d time.Duration) { clk.Set(t0.Add(d)) }, time.Second/time.Duration(perSecond), time.Hour, lognormal)
				for _, tr := range rec.all(t) {
					if tr.Cause == registry.CauseSlowCalls {
						trips++
					}
				}
			}
			t.Logf("σ %.1f, %3d calls/s: %4d slow_calls trips in 10 hours", sigma, perSecond, trips)
		}
	}
}
