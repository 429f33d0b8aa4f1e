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
