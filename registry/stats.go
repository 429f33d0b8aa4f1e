package registry

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// This file holds what dashboards read besides Counts: refusals by reason,
// the window that last tripped the breaker, and an opt-in histogram of
// sampled call latencies. None of it adds work to the admitted closed path
// unless latency sampling is switched on (SampleLatency): then one atomic
// load there, and two clock reads on the calls sampled.

// NumRefusals is the length of the array Refusals returns: one entry per
// Refusal value (NotRefused is always 0).
const NumRefusals = int(RefusedSaturated) + 1

// Refusals returns how many calls were refused since the breaker was
// created, indexed by Refusal: RefusedOpen, RefusedProbeBusy and
// RefusedIsolated are short-circuits in Hystrix's sense, RefusedSaturated
// are bulkhead rejections. They sum to Counts.ShortCircuits. Lock-free.
func (b *Breaker) Refusals() [NumRefusals]uint64 {
	var out [NumRefusals]uint64
	for i := range out {
		out[i] = b.refusals[i].Load()
	}
	return out
}

func (b *Breaker) shortCircuitTotal() uint64 {
	var n uint64
	for i := range b.refusals {
		n += b.refusals[i].Load()
	}
	return n
}

// TripRecord is the breaker's last trip from closed: when, why, and the
// closed window as it stood at the moment it tripped — the failures that
// did it, which the open state's fresh counts no longer show.
type TripRecord struct {
	At    time.Time
	Cause Cause
	// Window holds Requests, Successes, Failures, Exclusions and
	// ConsecutiveFailures of the window that tripped (the rest are zero).
	// A forced trip (Trip, slow calls, the fleet's rate) counts its own
	// failure in it.
	Window Counts
}

// LastTrip returns the breaker's last trip from closed, and false when it
// never tripped. Re-opening after a failed probe and Isolate are not trips
// from closed: the record keeps the trip that began the outage.
func (b *Breaker) LastTrip() (TripRecord, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastTrip, !b.lastTrip.At.IsZero()
}

// noteTripWindow keeps the counts gobreaker is about to trip on, for the
// transition (onGobreakerChange) to record. It runs under gobreaker's mutex,
// from ReadyToTrip, only when it returns true.
func (b *Breaker) noteTripWindow(c gobreaker.Counts) {
	b.mu.Lock()
	b.tripWindow = Counts{Requests: c.Requests, Successes: c.TotalSuccesses, Failures: c.TotalFailures,
		Exclusions: c.TotalExclusions, ConsecutiveFailures: c.ConsecutiveFailures}
	b.mu.Unlock()
}

// LatencyBuckets is the number of buckets of a LatencyHistogram.
const LatencyBuckets = 64

// LatencyHistogram counts sampled call latencies in buckets of about half
// an octave: bucket 0 holds calls up to 1µs, bucket i the calls up to
// LatencyBucketUpper(i); the last bucket holds everything longer. The
// counts are cumulative since sampling began: subtract two reads to get
// the calls between them.
type LatencyHistogram [LatencyBuckets]uint64

// LatencyBucketUpper returns the upper bound of bucket i: 1µs for bucket 0,
// then alternately 1.5 and 2 times a power of two of microseconds.
func LatencyBucketUpper(i int) time.Duration {
	if i <= 0 {
		return time.Microsecond
	}
	oct := (i - 1) / 2 // bucket 2k+1: [2^k, 1.5·2^k) µs, 2k+2: [1.5·2^k, 2^(k+1)) µs
	up := math.Exp2(float64(oct))
	if i%2 == 1 {
		up *= 1.5
	} else {
		up *= 2
	}
	return time.Duration(up * float64(time.Microsecond))
}

func latencyBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us == 0 {
		return 0
	}
	k := bits.Len64(us) - 1 // 2^k ≤ us < 2^(k+1)
	i := 2*k + 1
	if k > 0 && us>>(k-1)&1 == 1 { // at least 1.5·2^k
		i++
	}
	return min(i, LatencyBuckets-1)
}

// Sub returns h minus an earlier read of the same histogram.
func (h LatencyHistogram) Sub(earlier LatencyHistogram) LatencyHistogram {
	for i := range h {
		h[i] -= min(earlier[i], h[i])
	}
	return h
}

// Total returns the number of calls counted.
func (h LatencyHistogram) Total() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile returns an upper bound of the q-quantile of the calls counted
// (the bound of the bucket it falls in), and 0 when none was.
func (h LatencyHistogram) Quantile(q float64) time.Duration {
	n := h.Total()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h {
		seen += c
		if seen >= rank {
			return LatencyBucketUpper(i)
		}
	}
	return LatencyBucketUpper(LatencyBuckets - 1)
}

// SampleLatency makes the breaker measure the latency of admitted calls,
// from admission to report, into the histogram Latencies returns: every
// call for every = 1, about one call in every for a larger power of two
// (other values are rounded up to one), none for 0 (the default). A
// sampled call costs two clock reads; a call that is not sampled, one
// random number. Outcomes reported as Excluded are not measured. A status
// page switches it on and tunes it to the traffic it sees; the last call
// wins.
func (b *Breaker) SampleLatency(every uint32) {
	if every > 1 && every&(every-1) != 0 {
		every = 1 << bits.Len32(every)
		if every == 0 {
			every = 1 << 31
		}
	}
	if every != 0 && b.latHist.Load() == nil {
		b.latHist.CompareAndSwap(nil, new([LatencyBuckets]atomic.Uint64))
	}
	b.latEvery.Store(every)
}

// Latencies returns the sampled latencies since sampling was first
// switched on (all zero before).
func (b *Breaker) Latencies() LatencyHistogram {
	var out LatencyHistogram
	if h := b.latHist.Load(); h != nil {
		for i := range out {
			out[i] = h[i].Load()
		}
	}
	return out
}

// latencyOn decides at admission whether the call is a latency sample, and
// then makes sure *start holds its admission time.
func (b *Breaker) latencyOn(start *time.Time) bool {
	n := b.latEvery.Load()
	if n == 0 {
		return false
	}
	return b.latencyPick(n, start)
}

func (b *Breaker) latencyPick(n uint32, start *time.Time) bool {
	if n > 1 && rand.Uint32()&(n-1) != 0 {
		return false
	}
	if start.IsZero() {
		*start = b.reg.clock.Now()
	}
	return true
}

// observeLatency records a sampled call's latency at its report.
func (b *Breaker) observeLatency(o Outcome, start time.Time) {
	if o == Excluded || start.IsZero() {
		return
	}
	if h := b.latHist.Load(); h != nil {
		h[latencyBucket(b.reg.clock.Now().Sub(start))].Add(1)
	}
}

// Created returns when the breaker was created (by the registry's clock):
// a timeline of its states starts there.
func (b *Breaker) Created() time.Time { return b.created }
