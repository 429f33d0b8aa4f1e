package registry

import (
	"sync"
	"time"
)

// While a half-open probe is out, a refused call is told how long the probe
// is expected still to take, not how long it may take: a probe's timeout
// (its lease, shortened to the call timeout, the client's call budget and
// the slowness threshold) is a bound for hung probes, often minutes, while
// a recovered dependency answers its probe in its usual time. The estimate
// is the tail (p99) of the dependency's healthy latency less the time the
// probe has run, at least MinProbeRetryAfter and never past the probe's
// timeout. A dependency whose healthy latency is not known yet (fewer than
// minLatencySamples measured calls, counted again after a Reset for the
// client's measurements) keeps the timeout as the bound.

// MinProbeRetryAfter is the least retry time a call refused while a
// half-open probe is out is given once the dependency's healthy latency is
// known (and the probe's timeout is further away): the expected remaining
// time is an estimate, and a probe that runs past it is still running, so
// a refused call is never told to come back at once only to be refused
// again.
const MinProbeRetryAfter = time.Second

// observedLatency is the healthy latency a client measured (ObserveLatency).
type observedLatency struct {
	mu   sync.Mutex
	tail latencyTail // Guarded by mu.
	n    uint64      // Guarded by mu: samples recorded.
}

// ObserveLatency records how long a healthy call of the dependency took,
// from its admission to its successful outcome, as measured by a client
// that times its own calls (the failover Model times every model call it
// makes; the breaker reads no clock on the closed path unless a policy
// asks it to). With the latencies the in-flight slowness detector samples,
// these tell how long a half-open probe in flight is expected still to
// take: see MinProbeRetryAfter and Breaker.RetryAfter. A d ≤ 0 is ignored.
// Reset drops the latencies recorded before it.
// Safe for concurrent use; it takes a mutex of its own.
func (b *Breaker) ObserveLatency(d time.Duration) {
	if d <= 0 {
		return
	}
	o := b.observed.Load()
	if o == nil {
		b.observed.CompareAndSwap(nil, new(observedLatency))
		o = b.observed.Load()
	}
	o.mu.Lock()
	o.tail.add(d)
	o.n++
	o.mu.Unlock()
}

// expectedLatency is the tail (p99) of the dependency's healthy latency:
// from the client's measurements (ObserveLatency) when there are enough,
// else from the slowness detector's samples; 0 while neither has
// minLatencySamples. It takes only leaf mutexes: callers may hold mu.
func (b *Breaker) expectedLatency() time.Duration {
	if o := b.observed.Load(); o != nil {
		o.mu.Lock()
		n, q := o.n, o.tail.quantile(tailQuantile)
		o.mu.Unlock()
		if n >= minLatencySamples {
			return q
		}
	}
	if c := b.ct; c != nil && c.slow && c.samples.Load() >= minLatencySamples {
		c.mu.Lock()
		q := c.tail.quantile(tailQuantile)
		c.mu.Unlock()
		return q
	}
	return 0
}

// probeLeft is how long a call refused while probe r is out should wait:
// the expected latency (expect; 0: unknown) less the time r has run, at
// least MinProbeRetryAfter, and never past r's lease (its probe timeout) or
// its client's deadline (SetProbeDeadline), the bound when the latency is
// unknown. It may be ≤ 0 when the
// lease is due.
func probeLeft(r *ticketRec, now time.Time, expect time.Duration) time.Duration {
	left := r.bound().Sub(now)
	if expect > 0 {
		left = min(left, max(expect-now.Sub(r.began), MinProbeRetryAfter))
	}
	return left
}

// probesLeftLocked is the wait of a call refused because every probe slot
// is taken: the soonest probeLeft of the probes out, or ProbeLease when
// none is recorded yet (a slot taken a moment before its record). Caller
// holds mu.
func (b *Breaker) probesLeftLocked(now time.Time) time.Duration {
	w := b.pol.ProbeLease
	if len(b.probes) == 0 {
		return w
	}
	expect := b.expectedLatency()
	for _, r := range b.probes {
		w = min(w, probeLeft(r, now, expect))
	}
	return w
}
