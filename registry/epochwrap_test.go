package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// A call outstanding while the 12-bit epoch counter wraps (4,096 epochs: a
// tool without a timeout hanging about 7 minutes under a 1 s threshold)
// returns when the current epoch has its number and none of its own calls
// in flight: it must not be taken for one of them (review finding: the
// count borrowed into the admission bits, the epoch closed with 4,095 calls
// "in flight" and one outstanding call tripped slow_calls).
func TestEpochWrapFalseTrip(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{SlowInFlight: time.Second, ConsecutiveFailures: 100, DisableFailureRate: true})
	x := mustAdmit(t, b) // epoch 0, outstanding
	for range 4096 {     // each admission closes one epoch (granularity 100 ms)
		clk.Advance(100 * time.Millisecond)
		mustAdmit(t, b).Done(registry.Success)
	}
	x.Done(registry.Success) // the current epoch is 4096 & 0xfff = 0 again
	z := mustAdmit(t, b)
	clk.Advance(100 * time.Millisecond)
	mustAdmit(t, b).Done(registry.Success)
	clk.Advance(1100 * time.Millisecond)
	if tk, d := b.Admit(); d.Allowed {
		tk.Done(registry.Success)
	}
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("one outstanding call tripped the breaker: %v, %+v", st, b.ContainCounts())
	}
	z.Done(registry.Success)
	if cc := b.ContainCounts(); cc.InFlight != 0 {
		t.Errorf("in flight after every call returned: %+v", cc)
	}
}

// A hang that fills the bulkhead before the slowness threshold passes is
// still judged: every later call is refused as saturated, and those
// refusals evaluate the ring as admissions do (review finding: only state
// reads did, so such a hang never tripped the breaker).
func TestHangBehindAFullBulkheadTrips(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{MaxConcurrent: 5, SlowInFlight: time.Second, ConsecutiveFailures: 100, DisableFailureRate: true, NoJitter: true})
	rec := record(t, r)
	for range 5 {
		mustAdmit(t, b) // hung: never returns
	}
	var d registry.Decision
	var at time.Duration
	for at = 0; at < time.Minute; at += 100 * time.Millisecond {
		clk.Set(t0.Add(at))
		var tk registry.Ticket
		if tk, d = b.Admit(); d.Allowed {
			tk.Done(registry.Success)
			t.Fatalf("admitted over a full bulkhead at %v", at)
		}
		if d.Reason != registry.RefusedSaturated {
			break
		}
	}
	if d.Reason != registry.RefusedOpen || at > 2*time.Second {
		t.Fatalf("at %v: %+v, want refused open within about 1.5 thresholds", at, d)
	}
	if got := rec.briefs(t); len(got) != 1 || got[0] != "svc:closed>open:slow_calls" {
		t.Errorf("transitions %v, want one slow_calls trip", got)
	}
}
