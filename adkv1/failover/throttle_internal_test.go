package failover

import (
	"math"
	"testing"
	"time"
)

// The reject probability is SRE's formula over the trailing window, capped,
// and forgets buckets older than the window.
func TestThrottleProbability(t *testing.T) {
	th := newThrottle(Throttle{K: 2, Window: 10 * time.Second, MaxRejectProbability: 0.5}, func() float64 { return 0.99 })
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		th.admit(now)
		if i < 3 {
			th.accepted(now)
		}
	}
	if p, want := th.probability(now), (10.0-2*3)/11; math.Abs(p-want) > 1e-12 {
		t.Fatalf("p = %v, want (10 − 2·3)/11 = %v", p, want)
	}
	for range 90 {
		th.admit(now) // 100 requests, 3 accepts: capped
	}
	if p := th.probability(now); p != 0.5 {
		t.Fatalf("p = %v, want the 0.5 cap", p)
	}
	if p := th.probability(now.Add(9 * time.Second)); p != 0.5 {
		t.Fatalf("9 s later: p = %v, want the window to still hold the requests", p)
	}
	if p := th.probability(now.Add(10 * time.Second)); p != 0 {
		t.Fatalf("a window later: p = %v, want 0", p)
	}
	if !th.admit(now.Add(10 * time.Second)) {
		t.Fatal("shed with p 0")
	}
	if th.shed.Load() != 0 {
		t.Fatalf("shed %d with random 0.99 ≥ p", th.shed.Load())
	}
}
