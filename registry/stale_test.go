package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// stalePolicy trips on the failure rate over a count window of 10 (no
// consecutive-failure gate, no slowness detector).
func stalePolicy() registry.Policy {
	return registry.Policy{CountWindow: 10, MinCalls: 10, FailureRate: 0.5, DisableConsecutiveFailures: true,
		DisableSlowInFlight: true, OpenFor: 10 * time.Second, OpenBackoff: 1, NoJitter: true}
}

// tripAndRecover admits n calls and keeps them outstanding, trips b with
// ten failures, lets the hold end and closes b with a successful probe.
func tripAndRecover(t *testing.T, clk interface{ Advance(time.Duration) }, b *registry.Breaker, n int) (late []registry.Ticket, res []registry.Reservation) {
	t.Helper()
	for range n {
		late = append(late, mustAdmit(t, b))
		r, d := b.Reserve()
		if !d.Allowed {
			t.Fatalf("Reserve refused: %+v", d)
		}
		res = append(res, r)
	}
	trip(t, b)
	clk.Advance(11 * time.Second)
	probe := mustAdmit(t, b)
	if !probe.Probe() {
		t.Fatal("the call after the hold is not a probe")
	}
	probe.Done(registry.Success)
	wantState(t, b, closed, 0)
	return late, res
}

// Calls admitted while closed that report after the breaker tripped and
// closed again belong to the earlier closed generation: gobreaker ignores
// them, and so must the count window — ten stale failures in it tripped
// the freshly closed breaker on its first new failure.
func TestStaleOutcomesStayOutOfTheCountWindow(t *testing.T) {
	clk, _, b := newBreaker(t, stalePolicy())
	late, res := tripAndRecover(t, clk, b, 5)
	for i := range late {
		late[i].Done(registry.Failure)
		res[i].Report(registry.Failure, 0)
	}
	report(t, b, registry.Failure) // one fresh failure of one: below min_calls
	if st := b.State(); st != closed {
		t.Fatalf("ten stale failures and one fresh one opened the breaker: %v (%+v)", st, b.Counts())
	}
}

// Breaker.Fresh leaves out the outcomes of calls admitted before the last
// state change, on the ticket and the reservation paths alike; Reported
// keeps every one.
func TestFreshLeavesOutStaleOutcomes(t *testing.T) {
	clk, _, b := newBreaker(t, stalePolicy())
	late, res := tripAndRecover(t, clk, b, 3)
	before, fresh := b.Reported(), b.Fresh()
	for i := range late {
		late[i].Done(registry.Failure)
		res[i].Report(registry.Success, 0)
	}
	report(t, b, registry.Success)
	report(t, b, registry.Failure)
	after, fresh2 := b.Reported(), b.Fresh()
	if got := [3]uint64{after[0] - before[0], after[1] - before[1], after[2] - before[2]}; got != [3]uint64{4, 4, 0} {
		t.Fatalf("Reported moved by %v, want [4 4 0]", got)
	}
	if got := [3]uint64{fresh2[0] - fresh[0], fresh2[1] - fresh[1], fresh2[2] - fresh[2]}; got != [3]uint64{1, 1, 0} {
		t.Fatalf("Fresh moved by %v, want [1 1 0]", got)
	}
}
