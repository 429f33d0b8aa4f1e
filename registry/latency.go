package registry

import (
	"math"
	"time"
)

// latencyTail estimates a high quantile of healthy latency from the
// samples the slowness detector takes, so that its derived threshold is
// never inside the dependency's own tail: a tool whose healthy calls
// sometimes take seconds must not have those calls judged as a hang.
//
// It is a histogram of logarithmic buckets (a quarter-octave each, from
// 1 ms to about 18 hours; below and above go to the end buckets) whose
// counts are halved whenever they reach tailMaxCount in total, so old
// samples fade and a dependency whose tail shrinks is followed too. Not
// safe for concurrent use: contain.mu guards it.
type latencyTail struct {
	counts [tailBuckets]uint32
	total  uint32
}

const (
	tailBuckets   = 4 * 26 // quarter-octaves from 1 ms: 2^26 ms ≈ 18 h
	tailMaxCount  = 1024   // counts are halved at this total
	tailPerOctave = 4
	// tailQuantile is the quantile the threshold stays clear of.
	tailQuantile = 0.99
	// tailFactor multiplies that quantile into a floor for the derived
	// threshold: a call outstanding for twice the healthy p99 is
	// exceptional; one outstanding for the p99 is merely unlucky.
	tailFactor = 2
)

func tailBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	b := int(math.Log2(ms) * tailPerOctave)
	return min(b, tailBuckets-1)
}

// tailUpper is the upper bound of bucket b.
func tailUpper(b int) time.Duration {
	return time.Duration(math.Exp2(float64(b+1)/tailPerOctave) * float64(time.Millisecond))
}

func (t *latencyTail) add(d time.Duration) {
	if t.total >= tailMaxCount {
		t.total = 0
		for i := range t.counts {
			t.counts[i] /= 2
			t.total += t.counts[i]
		}
	}
	t.counts[tailBucket(d)]++
	t.total++
}

// quantile returns an upper bound of the q-quantile of the samples (0
// without samples).
func (t *latencyTail) quantile(q float64) time.Duration {
	if t.total == 0 {
		return 0
	}
	above := uint32(math.Floor(float64(t.total) * (1 - q)))
	var seen uint32
	for b := tailBuckets - 1; b >= 0; b-- {
		seen += t.counts[b]
		if seen > above {
			return tailUpper(b)
		}
	}
	return tailUpper(0)
}
