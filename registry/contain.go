package registry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// This file holds outage containment on the closed path: the bulkhead (a
// cap on concurrent calls), the in-flight slowness detector and the
// count-based failure-rate window. A breaker whose policy uses none of them
// has no contain and pays nothing.
//
// The in-flight slowness detector must not read the clock on the closed fast
// path (a clock read costs about half of a bare gobreaker call) and must not
// run a timer per call. It groups admitted calls into epochs: every call
// joins the current epoch with one atomic increment, and leaves it with one
// atomic decrement. The clock is read only when another call is already in
// flight (or on a state read), at most once per granularity (a tenth of the
// threshold): that evaluation closes the current epoch, stamping it with the
// time it was closed. Every call of a closed epoch started before its stamp,
// so a call of an epoch closed at least threshold ago has been outstanding
// for at least threshold: it is slow. Nothing is ever judged slow early; a
// slow call is recognised at most one granularity plus one admission late.

// track tags a call admitted through a contain: zero for calls that are not
// tracked (probes, breakers without contain). trackCounted is set on every
// tracked call (it holds an in-flight slot); trackSample marks a latency
// sample (the call's start time was read); the low 32 bits are the call's
// epoch in the slowness ring (0: not in the ring).
type track uint64

const (
	trackCounted track = 1 << 63
	trackSample  track = 1 << 62
)

// ringSlots is the number of epochs the slowness ring remembers. With an
// epoch closed at most every threshold/ringGranularity, a call is remembered
// for at least ringSlots/ringGranularity thresholds (1.5×): long enough to
// be counted once it is slow. Calls older than that are forgotten by the
// detector (their outcome still counts when they return).
const (
	ringSlots       = 16
	ringMask        = ringSlots - 1
	ringGranularity = 10
	// latencySampleEvery: one admitted call in this many measures its
	// latency for the derived threshold (every call until minLatencySamples).
	latencySampleEvery = 16
	minLatencySamples  = 8
)

// contain is a breaker's containment state. Fields after the configuration
// are touched concurrently; see each comment.
type contain struct {
	// Configuration, immutable.
	max       int           // bulkhead: concurrent calls; 0 none
	queueWait time.Duration // bulkhead: how long a call may wait for a slot
	slow      bool          // in-flight slowness on
	fixed     time.Duration // fixed threshold; 0: derived
	factor    float64       // derived threshold = factor × healthy latency
	tripAt    int           // outstanding slow calls that trip

	// word is admitted<<32 | in-flight: one atomic for the bulkhead, the
	// in-flight gauge and the sampling counter.
	word    atomic.Uint64
	peak    atomic.Int64
	refused atomic.Uint64 // bulkhead refusals
	waiters atomic.Int32
	wake    chan struct{}

	// The slowness ring: epoch is the current epoch; slots[e&ringMask] holds
	// e<<32 | calls of epoch e still outstanding.
	epoch  atomic.Uint32
	slots  [ringSlots]atomic.Uint64
	judged atomic.Uint32 // epochs ≤ judged were judged slow (0: none)
	// nextEval is when (unix ns, registry clock) the next evaluation is due.
	nextEval atomic.Int64
	samples  atomic.Int64 // latency samples taken
	verdicts atomic.Uint64
	late     atomic.Uint64
	thrNanos atomic.Int64 // current threshold, for lock-free readers

	mu       sync.Mutex
	closedAt [ringSlots]time.Time // Guarded by mu: when each epoch was closed.
	opened   time.Time            // Guarded by mu: when the current epoch began.
	healthy  time.Duration        // Guarded by mu: EWMA of healthy latency.

	ring *countRing // count-based window; nil when off
}

func newContain(p *Policy) *contain {
	slow := !p.DisableSlowInFlight && (p.SlowInFlight > 0 || p.SlowInFlightFactor > 0)
	if p.MaxConcurrent == 0 && !slow && p.CountWindow == 0 {
		return nil
	}
	c := &contain{
		max: p.MaxConcurrent, queueWait: p.QueueWait, slow: slow,
		fixed: p.SlowInFlight, factor: p.SlowInFlightFactor, tripAt: p.SlowInFlightCalls,
	}
	if c.queueWait > 0 {
		c.wake = make(chan struct{}, 1)
	}
	c.epoch.Store(1)
	c.slots[1].Store(1 << 32)
	c.thrNanos.Store(int64(c.fixed))
	if p.CountWindow > 0 {
		c.ring = &countRing{buf: make([]bool, p.CountWindow)}
	}
	return c
}

// Outcome of contain.enter.
const (
	enterOK = iota
	enterSaturated
	enterTripped
)

// enter admits a closed-state call into the contain: a bulkhead slot (with
// the queue wait, when wait is set), and the slowness ring. When another call
// is in flight it may first evaluate the ring, and trip the breaker (then
// the call is not admitted). start is set when the call is a latency sample.
func (c *contain) enter(b *Breaker, wait bool) (t track, start time.Time, res int) {
	w := c.word.Add(1<<32 | 1)
	n := int64(uint32(w))
	if c.max > 0 && n > int64(c.max) {
		c.release()
		if !wait {
			return 0, time.Time{}, enterSaturated // the slow path decides, and counts
		}
		if c.queueWait <= 0 || !c.waitSlot() {
			c.refused.Add(1)
			return 0, time.Time{}, enterSaturated
		}
		w = c.word.Load()
		n = int64(uint32(w))
	}
	if p := c.peak.Load(); n > p {
		for !c.peak.CompareAndSwap(p, n) {
			if p = c.peak.Load(); n <= p {
				break
			}
		}
	}
	t = trackCounted
	if !c.slow {
		return t, time.Time{}, enterOK
	}
	sample := c.fixed == 0 && (uint32(w>>32)%latencySampleEvery == 0 || c.samples.Load() < minLatencySamples)
	if n > 1 || sample {
		now := b.reg.clock.Now()
		if n > 1 && now.UnixNano() >= c.nextEval.Load() && c.evaluate(now) {
			c.release()
			b.tripSlow()
			return 0, time.Time{}, enterTripped
		}
		if sample {
			t |= trackSample
			start = now
		}
	}
	return t | track(c.join()), start, enterOK
}

// waitSlot waits up to queueWait for a bulkhead slot and takes it.
func (c *contain) waitSlot() bool {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	timer := time.NewTimer(c.queueWait)
	defer timer.Stop()
	for {
		if n := uint32(c.word.Add(1<<32 | 1)); int(n) <= c.max {
			if int(n) < c.max && c.waiters.Load() > 1 {
				c.signal() // a release may have been coalesced: pass it on
			}
			return true
		}
		c.word.Add(^uint64(0) - 1<<32) // undo, admitted count included
		select {
		case <-c.wake:
		case <-timer.C:
			return false
		}
	}
}

func (c *contain) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// release frees an in-flight slot.
func (c *contain) release() {
	c.word.Add(^uint64(0))
	if c.wake != nil && c.waiters.Load() > 0 {
		c.signal()
	}
}

// inFlight returns the number of tracked calls in flight.
func (c *contain) inFlight() int { return int(uint32(c.word.Load())) }

// join adds a call to the current epoch and returns the epoch.
func (c *contain) join() uint32 {
	for {
		e := c.epoch.Load()
		s := &c.slots[e&ringMask]
		w := s.Load()
		if uint32(w>>32) != e {
			continue // the slot is being handed to e: reload
		}
		if s.CompareAndSwap(w, w+1) {
			return e
		}
	}
}

// leave removes a call of epoch e from the ring. A call whose slot was
// recycled (it was outstanding for the whole ring) was already forgotten.
func (c *contain) leave(e uint32) {
	s := &c.slots[e&ringMask]
	for {
		w := s.Load()
		if uint32(w>>32) != e || uint32(w) == 0 {
			return
		}
		if s.CompareAndSwap(w, w-1) {
			return
		}
	}
}

// evaluate closes the current epoch when it is due and reports whether the
// outstanding slow calls reach the trip count; if so, their epochs are
// judged (their later outcomes are excluded: they were counted now).
func (c *contain) evaluate(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	thr := c.thresholdLocked()
	if thr <= 0 {
		c.nextEval.Store(now.Add(time.Second).UnixNano())
		return false
	}
	gran := max(thr/ringGranularity, time.Millisecond)
	c.nextEval.Store(now.Add(gran).UnixNano())
	cur := c.epoch.Load()
	if uint32(c.slots[cur&ringMask].Load()) == 0 {
		c.opened = now // nothing to close: restart the epoch
	} else if now.Sub(c.opened) >= gran {
		c.closedAt[cur&ringMask] = now
		next := cur + 1
		if next == 0 {
			next = 1
		}
		c.slots[next&ringMask].Store(uint64(next) << 32) // forget the oldest epoch
		c.epoch.Store(next)
		c.opened = now
		cur = next
	}
	j := c.judged.Load()
	slow, newest := 0, uint32(0)
	for i := uint32(1); i < ringSlots; i++ {
		e := cur - i
		if e == 0 || e <= j {
			break
		}
		w := c.slots[e&ringMask].Load()
		if uint32(w>>32) != e {
			break
		}
		if now.Sub(c.closedAt[e&ringMask]) < thr {
			continue
		}
		if newest == 0 {
			newest = e
		}
		slow += int(uint32(w))
	}
	if slow == 0 || slow < c.tripAt {
		return false
	}
	c.judged.Store(newest)
	c.verdicts.Add(uint64(slow))
	return true
}

// thresholdLocked returns the slowness threshold: fixed, or derived from
// healthy latency once enough samples were taken (0: not armed yet).
func (c *contain) thresholdLocked() time.Duration {
	if c.fixed > 0 {
		return c.fixed
	}
	if c.samples.Load() < minLatencySamples {
		return 0
	}
	return max(MinSlowInFlight, time.Duration(c.factor*float64(c.healthy)))
}

// sample records the latency of a healthy call.
func (c *contain) sample(d time.Duration) {
	c.mu.Lock()
	if c.samples.Load() == 0 || c.healthy == 0 {
		c.healthy = d
	} else {
		c.healthy += (d - c.healthy) / 8
	}
	n := c.samples.Add(1)
	if n >= minLatencySamples {
		c.thrNanos.Store(int64(max(MinSlowInFlight, time.Duration(c.factor*float64(c.healthy)))))
	}
	c.mu.Unlock()
}

// threshold returns the current slowness threshold (0: not armed).
func (c *contain) threshold() time.Duration {
	if c == nil || !c.slow {
		return 0
	}
	return time.Duration(c.thrNanos.Load())
}

// exit is the contain's part of a tracked call's report: it frees the
// in-flight slot, leaves the ring, takes a latency sample, and turns the
// outcome of a call already judged slow into Excluded (it was counted when
// judged; it must not count twice).
func (c *contain) exit(b *Breaker, t track, o Outcome, start time.Time) Outcome {
	if e := uint32(t); e != 0 {
		c.leave(e)
		if j := c.judged.Load(); j != 0 && e <= j {
			c.late.Add(1)
			o = Excluded
		} else if t&trackSample != 0 && o == Success && !start.IsZero() {
			if d := b.reg.clock.Now().Sub(start); d >= 0 {
				if thr := c.threshold(); thr == 0 || d < thr {
					c.sample(d)
				}
			}
		}
	}
	c.release()
	return o
}

// admitClosed admits a call through gobreaker while the breaker is closed,
// through the contain when there is one. saturated reports a bulkhead
// refusal; ok false without saturated means the caller should look at the
// state again (a trip raced, or the slowness detector just tripped).
func (b *Breaker) admitClosed(wait bool) (done func(error), t track, start time.Time, saturated, ok bool) {
	c := b.ct
	if c == nil {
		done, ok = b.allowClosed()
		return done, 0, time.Time{}, false, ok
	}
	t, start, res := c.enter(b, wait)
	switch res {
	case enterSaturated:
		return nil, 0, time.Time{}, true, false
	case enterTripped:
		return nil, 0, time.Time{}, false, false
	}
	done, ok = b.allowClosed()
	if !ok {
		if e := uint32(t); e != 0 {
			c.leave(e)
		}
		c.release()
		return nil, 0, time.Time{}, false, false
	}
	return done, t, start, false, true
}

// trackedOutcome is the report of a call: contain bookkeeping, then the
// error handed to gobreaker's done (recorded in the count window first, so
// that gobreaker's trip check sees it).
func (b *Breaker) trackedOutcome(t track, o Outcome, hint time.Duration, start time.Time) error {
	if t != 0 {
		o = b.ct.exit(b, t, o, start)
	}
	err := b.outcomeErr(o, hint, start)
	if c := b.ct; c != nil && c.ring != nil && t != 0 && err != errExcluded && b.Closed() {
		c.ring.add(err != nil)
	}
	return err
}

// checkSlow evaluates the slowness ring on a state read of a closed breaker
// and trips it when enough outstanding calls are slow. It reports whether it
// tripped.
func (b *Breaker) checkSlow() bool {
	c := b.ct
	if c == nil || !c.slow || c.inFlight() == 0 {
		return false
	}
	now := b.reg.clock.Now()
	if now.UnixNano() < c.nextEval.Load() || !c.evaluate(now) {
		return false
	}
	b.tripSlow()
	return true
}

// tripSlow opens a closed breaker because outstanding calls are slow, with
// the policy's hold (not a hint).
func (b *Breaker) tripSlow() { b.trip(0, CauseSlowCalls, false) }

// probeTimeout is how long a half-open probe may take before it counts as
// failed: the probe lease, shortened to the call timeout and the slowness
// threshold when they are set. retry_after while a probe is out is measured
// against it.
func (b *Breaker) probeTimeout() time.Duration {
	d := b.pol.ProbeLease
	if b.pol.CallTimeout > 0 {
		d = min(d, b.pol.CallTimeout)
	}
	if thr := b.ct.threshold(); thr > 0 {
		d = min(d, thr)
	}
	return d
}

// shouldTrip is gobreaker's ReadyToTrip: consecutive failures (unless
// switched off), then the failure rate over the count window when there is
// one, else over the time window.
func (b *Breaker) shouldTrip(c gobreaker.Counts) bool {
	if b.forceTrip.Load() {
		return true
	}
	if b.ct == nil || b.ct.ring == nil {
		return b.pol.readyToTrip(c.ConsecutiveFailures, c.TotalSuccesses, c.TotalFailures)
	}
	p := &b.pol
	if !p.DisableConsecutiveFailures && int(c.ConsecutiveFailures) >= p.ConsecutiveFailures {
		return true
	}
	return !p.DisableFailureRate && b.ct.ring.trips(p)
}

// resetWindow clears the count window (on every transition: a new state
// starts with fresh counts, as gobreaker's do).
func (c *contain) resetWindow() {
	if c != nil && c.ring != nil {
		c.ring.reset()
	}
}

// countRing is the outcomes of the last N counted calls.
type countRing struct {
	mu    sync.Mutex
	buf   []bool // Guarded by mu: true = failure.
	next  int    // Guarded by mu.
	n     int    // Guarded by mu: outcomes held (≤ len(buf)).
	fails int    // Guarded by mu.
}

func (r *countRing) add(fail bool) {
	r.mu.Lock()
	if r.n == len(r.buf) {
		if r.buf[r.next] {
			r.fails--
		}
	} else {
		r.n++
	}
	r.buf[r.next] = fail
	if fail {
		r.fails++
	}
	r.next = (r.next + 1) % len(r.buf)
	r.mu.Unlock()
}

func (r *countRing) trips(p *Policy) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n > 0 && r.n >= p.MinCalls && float64(r.fails) >= p.FailureRate*float64(r.n)
}

func (r *countRing) reset() {
	r.mu.Lock()
	clear(r.buf)
	r.next, r.n, r.fails = 0, 0, 0
	r.mu.Unlock()
}

// ContainCounts are a breaker's containment counters.
type ContainCounts struct {
	// InFlight is the number of closed-state calls admitted and not yet
	// reported; PeakInFlight its highest value since creation.
	InFlight, PeakInFlight int
	// Saturated counts calls the bulkhead refused.
	Saturated uint64
	// SlowVerdicts counts calls judged slow while still outstanding;
	// LateOutcomes counts reports of such calls, which were excluded (they
	// had been counted when judged).
	SlowVerdicts, LateOutcomes uint64
	// SlowThreshold is the current in-flight slowness threshold (0: off, or
	// not armed yet for lack of latency samples).
	SlowThreshold time.Duration
	// HealthChecks counts half-open probes run by the dependency's health
	// check instead of a user's call; HealthCheckFailures those that failed.
	HealthChecks, HealthCheckFailures uint64
}

// ContainCounts returns the breaker's containment counters.
func (b *Breaker) ContainCounts() ContainCounts {
	out := ContainCounts{HealthChecks: b.hcRuns.Load(), HealthCheckFailures: b.hcFails.Load()}
	if c := b.ct; c != nil {
		out.InFlight, out.PeakInFlight = c.inFlight(), int(c.peak.Load())
		out.Saturated = c.refused.Load()
		out.SlowVerdicts, out.LateOutcomes = c.verdicts.Load(), c.late.Load()
		out.SlowThreshold = c.threshold()
	}
	return out
}
