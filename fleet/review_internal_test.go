package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestWindowClockSteppedBack: a registry clock that steps back (a custom
// Clock, a VM restored from a snapshot) leaves deltas stamped "in the
// future". They are re-anchored at the step and expire a Window later,
// like an open hold (Breaker re-anchors it too) — not a Window after the
// clock catches up again, an hour of stale failures later.
func TestWindowClockSteppedBack(t *testing.T) {
	p := registry.Policy{Window: time.Minute, MinCalls: 10, FailureRate: 0.5}.WithDefaults()
	t0 := time.Unix(1_000_000, 0)
	var w window
	w.add(t0.Add(time.Hour), 0, 10, &p) // then the clock steps back an hour
	w.add(t0, 1, 0, &p)
	w.forget(t0.Add(61*time.Second), &p)
	if w.s+w.f != 0 {
		t.Fatalf("a Window after the step, %d/%d outcomes of before it are still counted", w.s, w.f)
	}
	w.add(t0.Add(62*time.Second), 0, 10, &p) // new outcomes count as usual
	if w.s != 0 || w.f != 10 || len(w.deltas) != 1 || !w.meets(&p) {
		t.Fatalf("after the step: %d/%d %+v", w.s, w.f, w.deltas)
	}
}

// TestOriginsBoundedWhenTheClockStepsBack: with every remembered sender
// seen "in the future" (the registry clock stepped back), a new sender must
// still push one out: the table grew by one per new sender.
func TestOriginsBoundedWhenTheClockStepsBack(t *testing.T) {
	var o origins
	t0 := time.Unix(1_000_000, 0)
	for i := range maxOrigins {
		o.admit(fmt.Sprint("a", i), 1, t0.Add(time.Hour))
	}
	for i := range 3 * maxOrigins {
		o.admit(fmt.Sprint("b", i), 1, t0)
	}
	if len(o.last) > maxOrigins {
		t.Fatalf("%d origins remembered, at most %d", len(o.last), maxOrigins)
	}
}
