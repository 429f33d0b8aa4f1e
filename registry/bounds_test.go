package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// A clock stepping backwards must not stretch an open hold past the hold as
// set (here MaxOpenFor), nor a hint floor past MaxRetryHint.
func TestHoldClockStepsBack(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Minute, MaxOpenFor: 2 * time.Minute, NoJitter: true, MaxRetryHint: 10 * time.Minute}
	clk, _, b := newBreaker(t, pol)
	trip(t, b)
	if w := b.RetryAfter(); w != time.Minute {
		t.Fatalf("RetryAfter = %v, want 1m", w)
	}
	clk.Set(t0.Add(-time.Hour)) // the clock steps back an hour
	if w := b.RetryAfter(); w > pol.MaxOpenFor {
		t.Fatalf("after the clock stepped back, RetryAfter = %v, want ≤ MaxOpenFor %v", w, pol.MaxOpenFor)
	}
	if _, d := b.Admit(); d.Allowed || d.RetryAfter > pol.MaxOpenFor {
		t.Fatalf("Admit = %+v, want a refusal with RetryAfter ≤ %v", d, pol.MaxOpenFor)
	}
	clk.Advance(time.Minute + time.Nanosecond)
	if st := b.State(); st != halfOpen {
		t.Fatalf("state after the hold = %v, want half_open", st)
	}
}

func TestHintFloorClockStepsBack(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Minute, NoJitter: true, MaxRetryHint: 10 * time.Minute}
	clk, _, b := newBreaker(t, pol)
	b.ObserveRetryAfter(10 * time.Minute)
	clk.Set(t0.Add(-24 * time.Hour))
	trip(t, b)
	if w := b.RetryAfter(); w > pol.MaxRetryHint {
		t.Fatalf("RetryAfter = %v, want ≤ MaxRetryHint %v", w, pol.MaxRetryHint)
	}
}

func TestMaxBreakersRange(t *testing.T) {
	for _, n := range []int{-1, registry.MaxBreakersLimit + 1, int(^uint(0) >> 1)} {
		if _, err := registry.New(registry.WithMaxBreakers(n)); err == nil {
			t.Errorf("WithMaxBreakers(%d) accepted", n)
		}
	}
	if _, err := registry.New(registry.WithNotifyQueue(int(^uint(0) >> 1))); err == nil {
		t.Error("WithNotifyQueue(MaxInt) accepted")
	}
	if r, err := registry.New(registry.WithMaxBreakers(registry.MaxBreakersLimit)); err != nil || r.Cap() != registry.MaxBreakersLimit {
		t.Errorf("WithMaxBreakers(limit) = %v, %v", r, err)
	}
}

// A hint reported after Reset by a call admitted before it must not apply
// to the fresh breaker: neither a trip nor a floor for a later hold.
func TestHintAfterResetIsDropped(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true}
	_, _, b := newBreaker(t, pol)
	tk := mustAdmit(t, b)
	res, d := b.Reserve()
	if !d.Allowed {
		t.Fatal("refused")
	}
	b.Reset()
	tk.DoneWithRetryAfter(failure, time.Hour)
	res.Report(failure, time.Hour)
	res.Trip(time.Hour, registry.CauseQuotaExhausted)
	if st := b.Status(); st.State != closed || st.RetryAfter != 0 {
		t.Fatalf("after late hints: %+v, want closed", st)
	}
	report(t, b, failure) // a fresh trip: the policy's hold, no stale floor
	if w := b.RetryAfter(); w != 10*time.Second {
		t.Fatalf("hold after a fresh trip = %v, want 10s (no floor from before the reset)", w)
	}
}

// The cause of the current open is the breaker's own record.
func TestStatusCause(t *testing.T) {
	_, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 5, OpenFor: 10 * time.Second, NoJitter: true})
	if c := b.Status().Cause; c != 0 {
		t.Fatalf("closed cause = %v", c)
	}
	// RetryHintFailures (3) failures in a row, the last with a hint, open
	// it for the hint; one of them alone does not.
	mustAdmit(t, b).Done(failure)
	mustAdmit(t, b).Done(failure)
	if c := b.Status().Cause; c != 0 {
		t.Fatalf("closed cause after two failures = %v", c)
	}
	mustAdmit(t, b).DoneWithRetryAfter(failure, 20*time.Second)
	if st := b.Status(); st.State != open || st.Cause != registry.CauseRetryHint || st.RetryAfter != 20*time.Second {
		t.Fatalf("after a third failure, a 429 with a hint: %+v", st)
	}
	if _, d := b.Admit(); d.Cause != registry.CauseRetryHint {
		t.Fatalf("refusal cause = %v", d.Cause)
	}
	b.Reset()
	if c := b.Status().Cause; c != 0 {
		t.Fatalf("cause after reset = %v", c)
	}
}

// A half-open probe failing with a retry hint re-opens for at least the
// hint, with the hint's cause, whether or not the policy trips on hints.
func TestProbeFailureWithHint(t *testing.T) {
	for _, tripOn := range []*bool{nil, ptr(true), ptr(false)} {
		pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, TripOnRetryHint: tripOn}
		clk, _, b := newBreaker(t, pol)
		trip(t, b)
		clk.Advance(11 * time.Second)
		probe := mustAdmit(t, b)
		if !probe.Probe() {
			t.Fatal("not a probe")
		}
		probe.DoneWithRetryAfter(failure, 90*time.Second)
		st := b.Status()
		wantCause := registry.CauseRetryHint // a failed probe re-opens either way
		if st.State != open || st.RetryAfter != 90*time.Second || st.Cause != wantCause {
			t.Fatalf("trip_on_retry_hint=%v: after a failed probe with a 90s hint: %+v", pol.TripsOnRetryHint(), st)
		}
		if b.PendingProbes() != 0 {
			t.Fatalf("probe still pending")
		}
	}
}
