package fleet

import (
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
