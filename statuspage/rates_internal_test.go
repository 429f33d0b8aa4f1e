package statuspage

import "testing"

// TestSamplingFor: every call is measured up to latencyTarget calls a
// second, one in a power of two above, about latencyTarget a second.
func TestSamplingFor(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want uint32
	}{{0, 1}, {50, 1}, {100, 1}, {101, 2}, {200, 2}, {201, 4}, {1000, 16}, {1e9, 1 << 20}} {
		if got := samplingFor(tc.rate); got != tc.want {
			t.Errorf("samplingFor(%v) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}
