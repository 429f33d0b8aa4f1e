package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestSlowButHealthyUnderTheCallTimeout: a healthy dependency whose every
// call takes 70% of its call timeout (a model endpoint answering in 7 s
// under a 10 s timeout) is not a hang. The derived threshold's ceiling
// (half the call timeout) sat below its normal latency, so every call was
// judged slow and the breaker tripped on healthy traffic.
func TestSlowButHealthyUnderTheCallTimeout(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{CallTimeout: 10 * time.Second})
	rec := record(t, r)
	set := func(d time.Duration) { clk.Set(t0.Add(d)) }
	refused := replayLatencies(t, b, set, 500*time.Millisecond, 10*time.Minute, func() time.Duration { return 7 * time.Second })
	if got := rec.briefs(t); len(got) != 0 || refused != 0 {
		cc := b.ContainCounts()
		t.Fatalf("a healthy dependency slower than half its call timeout was tripped: %d transitions (first %v), %d calls refused, threshold %v",
			len(got), got[:min(len(got), 2)], refused, cc.SlowThreshold)
	}
}

// TestCallBudgetCapsTheDerivedThreshold: a dependency whose client bounds
// every call (SetCallBudget: an MCP server's operation budget) has its
// derived slowness threshold capped by that budget, as a policy call
// timeout caps it: a call still out at the budget has already failed.
func TestCallBudgetCapsTheDerivedThreshold(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{})
	set := func(d time.Duration) { clk.Set(t0.Add(d)) }
	replayLatencies(t, b, set, time.Second, 30*time.Minute, func() time.Duration { return 20 * time.Second })
	before := b.ContainCounts().SlowThreshold
	if before <= 45*time.Second {
		t.Fatalf("threshold %v: the replay should derive one above the 45s budget (ceiling %v)", before, registry.MaxDerivedSlowInFlight)
	}
	b.SetCallBudget(45 * time.Second)
	if got := b.ContainCounts().SlowThreshold; got != 45*time.Second {
		t.Fatalf("threshold after SetCallBudget(45s) = %v (was %v), want 45s", got, before)
	}
}
