package registry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// One Given/When/Then test per transition of the state diagram.

// gwtPolicy trips on 3 failures, holds 10s (×2 on re-trip), leases probes 5s.
var gwtPolicy = registry.Policy{
	ConsecutiveFailures: 3,
	DisableFailureRate:  true,
	OpenFor:             10 * time.Second,
	OpenBackoff:         2,
	NoJitter:            true,
	HalfOpenProbes:      2,
	ProbeLease:          5 * time.Second,
}

// ignoreSeq compares transitions without their registry-wide Seq.
var ignoreSeq = cmpopts.IgnoreFields(registry.Transition{}, "Seq")

func wantTransitions(t *testing.T, rec *recorder, want ...registry.Transition) {
	t.Helper()
	if diff := cmp.Diff(want, rec.all(t), ignoreSeq); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

func TestClosedToOpen(t *testing.T) {
	// Given a closed breaker with two failures in a row
	clk, r, b := newBreaker(t, gwtPolicy)
	rec := record(t, r)
	report(t, b, failure)
	report(t, b, failure)
	wantState(t, b, closed, 0)

	// When a third failure is reported
	clk.Advance(time.Second)
	report(t, b, failure)

	// Then it opens for OpenFor, refuses calls and tells subscribers once
	wantState(t, b, open, 10*time.Second)
	_, d := b.Admit()
	if want := (registry.Decision{State: open, Reason: registry.RefusedOpen, RetryAfter: 10 * time.Second, At: clk.Now(), Cause: registry.CauseTrip}); d != want {
		t.Errorf("Admit = %+v, want %+v", d, want)
	}
	c := b.Counts()
	if c.Trips != 1 || c.ShortCircuits != 1 {
		t.Errorf("counts = %+v, want 1 trip and 1 short-circuit", c)
	}
	if st := b.Status(); !st.Since.Equal(t0.Add(time.Second)) {
		t.Errorf("Since = %v, want t0+1s", st.Since)
	}
	wantTransitions(t, rec, registry.Transition{
		Key: "svc", From: closed, To: open, Cause: registry.CauseTrip,
		At: t0.Add(time.Second), RetryAfter: 10 * time.Second,
	})
}

func TestOpenToHalfOpen(t *testing.T) {
	// Given an open breaker
	clk, r, b := newBreaker(t, gwtPolicy)
	trip(t, b)
	rec := record(t, r)

	// When its hold expires, the state reads half_open at once, but the
	// transition happens only when a call arrives
	clk.Advance(10 * time.Second)
	wantState(t, b, halfOpen, 0)
	if got := rec.all(t); len(got) != 0 {
		t.Fatalf("transition before any call: %v", got)
	}
	clk.Advance(time.Second)
	tk, d := b.Admit()

	// Then the call is a probe with a lease, and subscribers see
	// open→half_open caused by the hold expiring
	if !d.Allowed || d.State != halfOpen || !tk.Probe() {
		t.Fatalf("Admit = %+v, probe=%v; want an admitted probe", d, tk.Probe())
	}
	if n := b.PendingProbes(); n != 1 {
		t.Errorf("PendingProbes = %d, want 1", n)
	}
	wantState(t, b, halfOpen, 0) // one of two slots still free
	wantTransitions(t, rec, registry.Transition{
		Key: "svc", From: open, To: halfOpen, Cause: registry.CauseHoldExpired, At: t0.Add(11 * time.Second),
	})
}

func TestHalfOpenToClosed(t *testing.T) {
	// Given a half-open breaker with both probes out
	clk, r, b := newBreaker(t, gwtPolicy)
	trip(t, b)
	clk.Advance(10 * time.Second)
	p1, p2 := mustAdmit(t, b), mustAdmit(t, b)
	wantState(t, b, halfOpen, 5*time.Second)
	rec := record(t, r)

	// When the first probe succeeds, it stays half-open; when the second does
	p1.Done(success)
	wantState(t, b, halfOpen, 5*time.Second)
	clk.Advance(time.Second)
	p2.Done(success)

	// Then it closes with fresh counts and no pending probe
	wantState(t, b, closed, 0)
	c := b.Counts()
	if c.Requests != 0 || c.Failures != 0 || c.ConsecutiveFailures != 0 {
		t.Errorf("counts after close = %+v, want fresh", c)
	}
	if n := b.PendingProbes(); n != 0 {
		t.Errorf("PendingProbes = %d, want 0", n)
	}
	report(t, b, success)
	wantTransitions(t, rec, registry.Transition{
		Key: "svc", From: halfOpen, To: closed, Cause: registry.CauseProbeSucceeded, At: t0.Add(11 * time.Second),
	})
}

func TestHalfOpenToOpenByFailure(t *testing.T) {
	// Given a half-open breaker with a probe out
	clk, r, b := newBreaker(t, gwtPolicy)
	trip(t, b)
	clk.Advance(10 * time.Second)
	p := mustAdmit(t, b)
	rec := record(t, r)

	// When the probe fails
	clk.Advance(time.Second)
	p.Done(failure)

	// Then it re-opens with the grown hold (10s × 2)
	wantState(t, b, open, 20*time.Second)
	if c := b.Counts(); c.Trips != 2 {
		t.Errorf("Trips = %d, want 2", c.Trips)
	}
	wantTransitions(t, rec, registry.Transition{
		Key: "svc", From: halfOpen, To: open, Cause: registry.CauseProbeFailed,
		At: t0.Add(11 * time.Second), RetryAfter: 20 * time.Second,
	})
}

func TestHalfOpenToOpenByLeaseExpiry(t *testing.T) {
	// Given a half-open breaker whose only probe never reports
	clk, r, b := newBreaker(t, gwtPolicy)
	trip(t, b)
	clk.Advance(10 * time.Second)
	lost := mustAdmit(t, b)
	rec := record(t, r)

	// When the probe's lease (5s) runs out
	clk.Advance(5 * time.Second)

	// Then the probe counts as failed: re-open with the grown hold, and a
	// late report of the probe is refused
	wantState(t, b, open, 20*time.Second)
	if lost.Done(success) {
		t.Error("late Done of an expired probe returned true")
	}
	wantState(t, b, open, 20*time.Second)
	wantTransitions(t, rec, registry.Transition{
		Key: "svc", From: halfOpen, To: open, Cause: registry.CauseLeaseExpired,
		At: t0.Add(15 * time.Second), RetryAfter: 20 * time.Second,
	})
}

func TestAnyToIsolated(t *testing.T) {
	setups := map[registry.State]func(t *testing.T, clk *registrytest.FakeClock, b *registry.Breaker){
		closed: func(*testing.T, *registrytest.FakeClock, *registry.Breaker) {},
		open:   func(t *testing.T, _ *registrytest.FakeClock, b *registry.Breaker) { trip(t, b) },
		halfOpen: func(t *testing.T, clk *registrytest.FakeClock, b *registry.Breaker) {
			trip(t, b)
			clk.Advance(10 * time.Second)
			mustAdmit(t, b)
		},
	}
	for _, from := range []registry.State{closed, open, halfOpen} {
		t.Run(from.String(), func(t *testing.T) {
			// Given a breaker in state from, with a call in flight admitted while closed
			clk, r, b := newBreaker(t, gwtPolicy)
			inflight := mustAdmit(t, b)
			setups[from](t, clk, b)
			rec := record(t, r)

			// When an operator isolates it
			clk.Advance(time.Second)
			if err := r.Isolate("svc"); err != nil {
				t.Fatal(err)
			}

			// Then it refuses every call as isolated, whatever outcomes arrive
			st := b.Status()
			if st.State != open || !st.Isolated {
				t.Fatalf("status = %+v, want open and isolated", st)
			}
			for range 3 {
				inflight.Done(success)
				clk.Advance(time.Hour)
				_, d := b.Admit()
				if d.Allowed || d.Reason != registry.RefusedIsolated || d.State != open {
					t.Fatalf("Admit while isolated = %+v", d)
				}
				if !registryErrIs(b) {
					t.Fatal("Allow error does not match ErrOpen")
				}
			}
			b.Isolate() // idempotent: no second transition
			wantTransitions(t, rec, registry.Transition{
				Key: "svc", From: from, To: open, Cause: registry.CauseIsolated, At: clk.Now().Add(-3 * time.Hour),
			})
		})
	}
}

func registryErrIs(b *registry.Breaker) bool {
	_, err := b.Allow()
	var oe *registry.OpenError
	return err != nil && errors.Is(err, registry.ErrOpen) && errors.As(err, &oe) && oe.Reason == registry.RefusedIsolated
}

func TestIsolatedToClosedByReset(t *testing.T) {
	// Given an isolated breaker that had tripped, with tickets still out
	clk, r, b := newBreaker(t, gwtPolicy)
	old := []registry.Ticket{mustAdmit(t, b), mustAdmit(t, b), mustAdmit(t, b)}
	trip(t, b)
	b.ObserveRetryAfter(time.Hour)
	b.Isolate()
	rec := record(t, r)

	// When an operator resets it
	clk.Advance(time.Second)
	r.Reset("svc")

	// Then it is closed with fresh counts, and the old tickets' failures
	// are ignored (three would trip the new breaker)
	wantState(t, b, closed, 0)
	if st := b.Status(); st.Isolated {
		t.Error("still isolated after Reset")
	}
	for _, tk := range old {
		tk.Done(failure)
	}
	wantState(t, b, closed, 0)
	if c := b.Counts(); c.Requests != 0 || c.Failures != 0 {
		t.Errorf("counts after reset = %+v, want fresh", c)
	}
	// The hint floor and the hold growth were reset too.
	trip(t, b)
	wantState(t, b, open, 10*time.Second)
	wantTransitions(t, rec,
		registry.Transition{Key: "svc", From: open, To: closed, Cause: registry.CauseReset, At: t0.Add(time.Second)},
		registry.Transition{Key: "svc", From: closed, To: open, Cause: registry.CauseTrip, At: t0.Add(time.Second), RetryAfter: 10 * time.Second},
	)
}
