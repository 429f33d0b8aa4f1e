package registry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLatencyTailQuantile: the p99 is an upper bound within a bucket (a
// quarter-octave, 19%) of the true one, halving keeps the shape, and the
// tail follows a dependency whose latency changed.
func TestLatencyTailQuantile(t *testing.T) {
	var lt latencyTail
	if q := lt.quantile(0.99); q != 0 {
		t.Fatalf("no samples: %v", q)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Log-normal, median 200 ms, σ 1.2: p99 = 200 ms × e^(2.326×1.2) ≈ 3.26 s.
	const want = 3.26
	for range 100_000 {
		lt.add(time.Duration(float64(200*time.Millisecond) * math.Exp(1.2*rng.NormFloat64())))
	}
	got := lt.quantile(0.99).Seconds()
	if got < want*0.9 || got > want*1.25 {
		t.Errorf("p99 = %.2fs, want ≈ %.2fs (an upper bound within a bucket)", got, want)
	}
	if lt.total > tailMaxCount {
		t.Errorf("total %d over %d: counts were not halved", lt.total, tailMaxCount)
	}
	// The dependency now answers in 50 ms: after a few thousand samples
	// the old tail has faded.
	for range 4 * tailMaxCount {
		lt.add(50 * time.Millisecond)
	}
	if q := lt.quantile(0.99); q > 60*time.Millisecond {
		t.Errorf("p99 after the tail went away = %v", q)
	}
	// The ends: under 1 ms and absurdly long samples land in the end buckets.
	var ends latencyTail
	ends.add(0)
	ends.add(time.Duration(math.MaxInt64))
	if q := ends.quantile(1); q != tailUpper(tailBuckets-1) {
		t.Errorf("max = %v", q)
	}
}

// TestDerivedThresholdCeiling: slow successes raise the derived threshold
// up to the call timeout (or MaxDerivedSlowInFlight), never past it
// (review finding: 2% of calls succeeding after 60 s taught the detector a
// threshold of 2 min 11 s, and a real hang then took minutes to trip).
func TestDerivedThresholdCeiling(t *testing.T) {
	for _, tc := range []struct {
		callTimeout time.Duration
		want        time.Duration
	}{{0, MaxDerivedSlowInFlight}, {30 * time.Second, 30 * time.Second}, {300 * time.Millisecond, MinSlowInFlight}} {
		p := Policy{CallTimeout: tc.callTimeout}
		r := p.WithDefaults()
		c := newContain(&r)
		for range 200 {
			c.sample(50*time.Millisecond, false)
			c.sample(10*time.Minute, true) // slow successes: half the samples
		}
		if got := c.threshold(); got != tc.want {
			t.Errorf("call timeout %v: threshold %v, want the ceiling %v", tc.callTimeout, got, tc.want)
		}
	}
}
