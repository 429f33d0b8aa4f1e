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
// Every admitted closed-state call is counted in one atomic word — calls in
// flight, calls of the current epoch, an admission counter and the current
// epoch — so a call costs one compare-and-swap on admission and one on its
// report, bulkhead and slowness together.
//
// The in-flight slowness detector must not read the clock on the closed fast
// path (a clock read costs about half of a bare gobreaker call) and must not
// run a timer per call. Calls are grouped into epochs: a call joins the
// current epoch when it is admitted. The clock is read only when another
// call is already in flight (or on a state read), and the ring evaluated at
// most once per granularity (a tenth of the threshold): the evaluation
// closes the current epoch, stamping it with the time it was closed, and
// moves its count to the epoch's slot. Every call of a closed epoch started
// before its stamp, so a call of an epoch closed at least threshold ago has
// been outstanding for at least threshold: it is slow. Nothing is ever judged
// slow early; a slow call is recognised at most one granularity plus one
// admission late.

// track tags a call admitted through a contain: zero for calls that are not
// tracked (probes, breakers without contain). trackTracked is set on every
// tracked call (it is counted in flight); trackRing on calls in the slowness
// ring, whose epoch is in the low bits; trackSample marks a latency sample
// (the call's start time was read).
type track uint64

const (
	trackTracked track = 1 << 63
	trackRing    track = 1 << 62
	trackSample  track = 1 << 61
)

// The layout of contain.word.
const (
	wordTotalMask = 1<<32 - 1 // calls in flight
	wordCurShift  = 32        // calls of the current epoch in flight
	wordCurMask   = 1<<12 - 1
	wordAdmShift  = 44 // admissions, wrapping (paces latency samples)
	wordAdmMask   = 1<<8 - 1
	wordEpShift   = 52 // the current epoch, wrapping
	epochMask     = 1<<12 - 1
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
	// latency for the derived threshold (every call until warmSamples: the
	// tail needs a few dozen samples before its p99 means anything).
	latencySampleEvery = 128
	minLatencySamples  = 8
	warmSamples        = 64
)

// contain is a breaker's containment state. Fields after the configuration
// are touched concurrently; see each comment.
type contain struct {
	// Configuration, immutable.
	max       uint32        // bulkhead: concurrent calls; 0 none
	queueWait time.Duration // bulkhead: how long a call may wait for a slot
	slow      bool          // in-flight slowness on
	derive    bool          // slow, with a derived threshold (latency samples)
	fixed     time.Duration // fixed threshold; 0: derived
	factor    float64       // derived threshold = factor × healthy latency
	tripAt    int           // outstanding slow calls that trip
	// baseCeiling is the derived threshold's cap the policy gives (its call
	// timeout, or MaxDerivedSlowInFlight); ceiling (Guarded by mu) is the
	// cap in force, lowered from it by Breaker.SetCallBudget.
	baseCeiling, ceiling time.Duration

	word    atomic.Uint64 // see the wordXxx constants
	peak    atomic.Uint32
	refused atomic.Uint64 // bulkhead refusals
	waiters atomic.Int32
	wake    chan struct{}

	// slots[e&ringMask] counts the calls of closed epoch e still in flight.
	// A late report of a forgotten epoch may drive a recycled slot below
	// zero: that only ever undercounts slow calls.
	slots [ringSlots]atomic.Int64
	// judged is judgedValid | the newest epoch judged slow: its calls and
	// older ones were counted as failures when judged.
	judged atomic.Uint32
	// nextEval is when (unix ns, registry clock) the next evaluation is due.
	nextEval atomic.Int64
	samples  atomic.Int64 // latency samples taken
	verdicts atomic.Uint64
	stalls   atomic.Uint64 // trips by the stall rule
	late     atomic.Uint64
	thrNanos atomic.Int64 // current threshold, for lock-free readers

	mu       sync.Mutex
	closedAt [ringSlots]time.Time // Guarded by mu: when each epoch was closed.
	// closedIn: how many of each epoch's calls were in flight when it was
	// closed. Guarded by mu.
	closedIn [ringSlots]int64
	opened   time.Time     // Guarded by mu: when the current epoch began.
	healthy  time.Duration // Guarded by mu: EWMA of healthy latency.
	tail     latencyTail   // Guarded by mu: healthy latency's tail.

	ring *countRing // count-based window; nil when off
}

const (
	judgedValid = 1 << 31
	// judgedHorizon: a judgement is dropped this many epochs later (at
	// least a hundred thresholds), well before the 12-bit epoch wraps.
	judgedHorizon = 1024
)

func newContain(p *Policy) *contain {
	slow := !p.DisableSlowInFlight && (p.SlowInFlight > 0 || p.SlowInFlightFactor > 0)
	if p.MaxConcurrent == 0 && !slow && p.CountWindow == 0 {
		return nil
	}
	c := &contain{
		max: uint32(p.MaxConcurrent), queueWait: p.QueueWait, slow: slow, derive: slow && p.SlowInFlight == 0,
		fixed: p.SlowInFlight, factor: p.SlowInFlightFactor, tripAt: p.SlowInFlightCalls,
	}
	if c.queueWait > 0 {
		c.wake = make(chan struct{}, 1)
	}
	c.ceiling = MaxDerivedSlowInFlight
	if p.CallTimeout > 0 {
		// The call timeout itself, not a fraction of it: a dependency
		// whose healthy calls take most of their timeout would otherwise
		// have every call judged slow (TestSlowButHealthyUnderTheCallTimeout).
		c.ceiling = max(MinSlowInFlight, p.CallTimeout)
	}
	c.baseCeiling = c.ceiling
	c.thrNanos.Store(int64(c.fixed))
	if p.CountWindow > 0 {
		c.ring = &countRing{buf: make([]bool, p.CountWindow)}
	}
	return c
}

// covered reports whether epoch e is judged (e at or before the judged
// epoch, modulo the epoch's wrap).
func (c *contain) covered(e uint32) bool {
	j := c.judged.Load()
	return j&judgedValid != 0 && (j-e)&epochMask < epochMask/2
}

// Outcome of contain.enter.
const (
	enterOK = iota
	enterSaturated
	enterTripped
)

// enter admits a closed-state call into the contain: a bulkhead slot (with
// the queue wait, when wait is set) and the slowness ring. When another call
// is in flight it may first evaluate the ring, and trip the breaker (then
// the call is not admitted). *start is set when the call is a latency sample.
func (c *contain) enter(b *Breaker, wait bool, start *time.Time) (track, int) {
	t, others, ok := c.join()
	if !ok {
		if !wait {
			return 0, enterSaturated // the slow path decides, and counts
		}
		if c.queueWait <= 0 {
			c.refused.Add(1)
			return 0, enterSaturated
		}
		if t, others, ok = c.waitSlot(); !ok {
			c.refused.Add(1)
			return 0, enterSaturated
		}
	}
	return c.entered(b, t, others, start)
}

// entered completes an admission join took: when other calls are in flight
// it may evaluate the ring and trip (the call is then taken back); a
// latency sample reads the clock into *start.
func (c *contain) entered(b *Breaker, t track, others bool, start *time.Time) (track, int) {
	if !c.slow {
		return t, enterOK
	}
	sample := t&trackSample != 0 // only set when the threshold is derived
	t &^= trackSample
	if others || sample {
		now := b.reg.clock.Now()
		if others && now.UnixNano() >= c.nextEval.Load() && c.evaluate(now) {
			c.leave(t)
			b.tripSlow()
			return 0, enterTripped
		}
		if sample {
			t |= trackSample
			*start = now
		}
	}
	return t, enterOK
}

// join counts a call in flight and in the current epoch, unless the
// bulkhead is full (ok false). others reports that other calls were in
// flight; trackSample in t marks an admission due for a latency sample.
func (c *contain) join() (t track, others, ok bool) {
	for {
		w := c.word.Load()
		total := uint32(w & wordTotalMask)
		if c.max > 0 && total >= c.max {
			return 0, false, false
		}
		cur := (w >> wordCurShift) & wordCurMask
		adm := (w >> wordAdmShift) & wordAdmMask
		ep := uint32(w >> wordEpShift)
		n := w&^(wordAdmMask<<wordAdmShift) | ((adm+1)&wordAdmMask)<<wordAdmShift
		n++
		t = trackTracked
		if c.slow && cur < wordCurMask {
			n += 1 << wordCurShift
			t |= trackRing | track(ep)
		}
		if c.derive && (adm%latencySampleEvery == 0 || c.samples.Load() < warmSamples) {
			t |= trackSample
		}
		if c.word.CompareAndSwap(w, n) {
			if p := c.peak.Load(); total+1 > p {
				c.peak.CompareAndSwap(p, total+1) // best effort under races
			}
			return t, total > 0, true
		}
	}
}

// leave uncounts a call admitted by join.
func (c *contain) leave(t track) {
	e := uint32(t) & epochMask
	for {
		w := c.word.Load()
		n := w - 1
		// A call of the current epoch, unless none is counted there: then
		// it is one of the epoch 4,096 closes ago (the number wrapped),
		// forgotten like any call of a forgotten epoch.
		inCur := t&trackRing != 0 && uint32(w>>wordEpShift) == e && (w>>wordCurShift)&wordCurMask > 0
		if inCur {
			n -= 1 << wordCurShift
		}
		if c.word.CompareAndSwap(w, n) {
			if t&trackRing != 0 && !inCur {
				c.slots[e&ringMask].Add(-1)
			}
			break
		}
	}
	if c.wake != nil && c.waiters.Load() > 0 {
		c.signal()
	}
}

// waitSlot waits up to queueWait for a bulkhead slot and takes it.
func (c *contain) waitSlot() (t track, others, ok bool) {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	timer := time.NewTimer(c.queueWait)
	defer timer.Stop()
	for {
		if t, others, ok = c.join(); ok {
			if c.inFlight() < int(c.max) && c.waiters.Load() > 1 {
				c.signal() // a release may have been coalesced: pass it on
			}
			return t, others, true
		}
		select {
		case <-c.wake:
		case <-timer.C:
			return 0, false, false
		}
	}
}

func (c *contain) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// inFlight returns the number of tracked calls in flight.
func (c *contain) inFlight() int { return int(uint32(c.word.Load() & wordTotalMask)) }

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
	w := c.word.Load()
	cur := uint32(w>>wordEpShift) & epochMask
	if (w>>wordCurShift)&wordCurMask == 0 {
		c.opened = now // nothing to close: restart the epoch
	} else if now.Sub(c.opened) >= gran {
		next := (cur + 1) & epochMask
		c.slots[next&ringMask].Store(0) // forget the oldest epoch
		for {
			n := w&^(wordCurMask<<wordCurShift)&^(epochMask<<wordEpShift) | uint64(next)<<wordEpShift
			if c.word.CompareAndSwap(w, n) {
				break
			}
			w = c.word.Load()
		}
		in := int64((w >> wordCurShift) & wordCurMask)
		c.slots[cur&ringMask].Add(in)
		c.closedAt[cur&ringMask] = now
		c.closedIn[cur&ringMask] = in
		c.opened = now
		cur = next
	}
	if j := c.judged.Load(); j&judgedValid != 0 && (cur-j)&epochMask >= judgedHorizon {
		c.judged.Store(0) // long gone: before the epoch wraps back onto it
	}
	slow, newest, found := 0, uint32(0), false
	var started, all int64
	// The stall rule (below): calls of epochs closed at least stallAge ago
	// (the healthy p99), counted from the newest such epoch while every
	// call of those epochs that was in flight at its close is still
	// outstanding; it holds when the count reaches an epoch closed at least
	// the threshold ago.
	stallAge := c.stallAgeLocked(thr)
	stall, stallNewest, stallFound, stallOld, stallDone := 0, uint32(0), false, false, stallAge <= 0
	for i := uint32(1); i < ringSlots; i++ {
		e := (cur - i) & epochMask
		if c.covered(e) {
			break
		}
		at := c.closedAt[e&ringMask]
		if at.IsZero() {
			continue
		}
		age := now.Sub(at)
		n := c.slots[e&ringMask].Load()
		if !stallDone && age >= stallAge {
			switch in := c.closedIn[e&ringMask]; {
			case n < in:
				stallDone = true // a call of this epoch returned: completions go on
			case n > 0:
				if !stallFound {
					stallNewest, stallFound = e, true
				}
				stall += int(n)
				stallOld = stallOld || age >= thr
			}
		}
		if age < thr {
			continue
		}
		if !found {
			newest, found = e, true
		}
		all += c.closedIn[e&ringMask]
		if n > 0 {
			slow += int(n)
			started = all
		}
	}
	// A hang is when the calls of those epochs are still outstanding: at
	// least half of those that were in flight when their epochs closed,
	// from the newest of them to the oldest with a slow call left (older
	// epochs do not dilute it: a hang that began a moment ago follows
	// calls that returned). A few tail calls of a healthy dependency,
	// outstanding among many calls of their epochs and of the epochs
	// between that returned, are not a hang: a long latency tail must not
	// trip the breaker.
	if slow > 0 && slow >= c.tripAt && int64(2*slow) >= started {
		c.judged.Store(judgedValid | newest)
		c.verdicts.Add(uint64(slow))
		return true
	}
	// The stall: completions have stopped while calls kept starting. The
	// oldest outstanding call is past the threshold, and every call that
	// started after it and is older than the healthy p99 is outstanding
	// too — none of them returned, although a healthy call returns within
	// the p99 ninety-nine times in a hundred. That is a hang seen a few p99s
	// earlier than the rule above, which waits for tripAt calls each past
	// the threshold (the threshold's 500 ms floor is several p99s of a
	// steady dependency). A tail call, however slow, is followed by calls
	// that return: it never makes a stall.
	if !stallOld || stall < c.tripAt {
		return false
	}
	n := 0
	for i := uint32(1); i < ringSlots; i++ { // every call judged now: the stall's and older
		e := (cur - i) & epochMask
		if c.covered(e) {
			break
		}
		if (stallNewest-e)&epochMask < epochMask/2 {
			n += int(max(c.slots[e&ringMask].Load(), 0))
		}
	}
	c.judged.Store(judgedValid | stallNewest)
	c.verdicts.Add(uint64(n))
	c.stalls.Add(1)
	return true
}

// stallAgeLocked is how long the calls a stall counts have been
// outstanding at least: the healthy p99, once the tail was measured on
// warmSamples calls (0: the stall rule is off — a fixed threshold takes no
// latency samples). It is at least one granularity (the epochs' width) and
// at most thr.
func (c *contain) stallAgeLocked(thr time.Duration) time.Duration {
	if c.fixed > 0 || c.samples.Load() < warmSamples {
		return 0
	}
	gran := max(thr/ringGranularity, time.Millisecond)
	return min(thr, max(gran, c.tail.quantile(tailQuantile)))
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
	return c.derivedLocked()
}

// derivedLocked is the derived threshold: never inside the healthy tail
// (tailFactor × its p99), at least MinSlowInFlight and, while the tail is
// being learned (fewer than warmSamples samples: a p99 of a few dozen
// calls is only their maximum), factor × the healthy latency — up to the
// ceiling (the call timeout, or MaxDerivedSlowInFlight), past which a tail
// of slow successes would leave a real hang unjudged for minutes. Once the
// tail is known the factor no longer applies: a dependency with a steady
// latency L is judged at max(500 ms, 2 × its p99 ≈ 2.4 L), not 10 L.
func (c *contain) derivedLocked() time.Duration {
	d := max(MinSlowInFlight, tailFactor*c.tail.quantile(tailQuantile))
	if c.samples.Load() < warmSamples {
		d = max(d, time.Duration(c.factor*float64(c.healthy)))
	}
	return min(d, max(c.ceiling, MinSlowInFlight))
}

// sample records the latency of a healthy call. A call slower than the
// current threshold moves only the tail (it may be judged slow when it is
// outstanding, but it returned healthy: the threshold must learn that such
// calls are part of the dependency's normal latency).
func (c *contain) sample(d time.Duration, slow bool) {
	c.mu.Lock()
	c.tail.add(d)
	if !slow {
		if c.samples.Load() == 0 || c.healthy == 0 {
			c.healthy = d
		} else {
			c.healthy += (d - c.healthy) / 8
		}
	}
	n := c.samples.Add(1)
	if n >= minLatencySamples {
		c.thrNanos.Store(int64(c.derivedLocked()))
	}
	c.mu.Unlock()
}

// threshold returns the current slowness threshold (0: off, or not armed).
func (c *contain) threshold() time.Duration {
	if c == nil || !c.slow {
		return 0
	}
	return time.Duration(c.thrNanos.Load())
}

// sampleSince takes a latency sample of a healthy call that started at
// start, unless it was slower than the current threshold.
func (c *contain) sampleSince(b *Breaker, start time.Time) {
	if start.IsZero() {
		return
	}
	if d := b.reg.clock.Now().Sub(start); d >= 0 {
		thr := c.threshold()
		c.sample(d, thr > 0 && d >= thr)
	}
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
	t, res := c.enter(b, wait, &start)
	switch res {
	case enterSaturated:
		return nil, 0, time.Time{}, true, false
	case enterTripped:
		return nil, 0, time.Time{}, false, false
	}
	done, ok = b.allowClosed()
	if !ok {
		c.leave(t)
		return nil, 0, time.Time{}, false, false
	}
	return done, t, start, false, true
}

// tryReserveContained is TryReserve through the contain: the reservation's
// fields are written in place.
func (b *Breaker) tryReserveContained(r *Reservation) bool {
	c := b.ct
	gen := b.gen.Load() // before admission, as TryReserve: see applyHint
	tr, others, ok := c.join()
	if !ok {
		return false // the slow path decides, and counts
	}
	var start time.Time // r is left alone unless the call is admitted
	if others || tr&trackSample != 0 {
		var res int
		if tr, res = c.entered(b, tr, others, &start); res != enterOK {
			return false
		}
	}
	done, ok := b.allowClosed()
	if !ok {
		c.leave(tr)
		return false
	}
	r.b, r.done, r.probe, r.tr, r.gen = b, done, Ticket{}, tr, gen
	if b.pol.SlowCall > 0 {
		start = b.reg.clock.Now()
	}
	r.lat = b.latencyOn(&start)
	r.start = start
	return true
}

// trackedOutcome is the report of a tracked call (t != 0): contain
// bookkeeping, then the error handed to gobreaker's done (recorded in the
// count window first, so that gobreaker's trip check sees it). A call
// already judged slow is reported as excluded: it was counted when judged,
// and must not count twice.
func (b *Breaker) trackedOutcome(t track, o Outcome, start time.Time, gen uint64) error {
	c := b.ct
	c.leave(t)
	if t&trackRing != 0 && c.covered(uint32(t)&epochMask) {
		c.late.Add(1)
		o = Excluded
	} else if t&trackSample != 0 && o == Success {
		c.sampleSince(b, start)
	}
	err := b.outcomeErr(o, start, gen) // the caller applied any retry hint (applyHint)
	// A call admitted before the last state change is not the window's:
	// gobreaker ignores its outcome, and so does the count window.
	if c.ring != nil && err != errExcluded && b.Closed() && b.samePhase(gen) {
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
// the policy's hold (not a hint). A breaker that left the closed state
// meanwhile is left alone: the verdict is about its closed calls, and must
// not fail a half-open probe.
func (b *Breaker) tripSlow() { b.trip(0, CauseSlowCalls, false, true) }

// ProbeTimeout returns how long a half-open probe of this breaker may take
// before it counts as failed: the probe lease, shortened to the call
// timeout, the client's call budget (SetCallBudget) and the in-flight
// slowness threshold when they are set. A fleet's probe lease lasts this
// long.
func (b *Breaker) ProbeTimeout() time.Duration { return b.probeTimeout() }

// probeTimeout is how long a half-open probe may take before it counts as
// failed: the probe lease, shortened to the call timeout, the client's call
// budget (SetCallBudget) and the slowness threshold when they are set.
// retry_after while a probe is out is measured against it.
func (b *Breaker) probeTimeout() time.Duration {
	d := b.pol.ProbeLease
	if b.pol.CallTimeout > 0 {
		d = min(d, b.pol.CallTimeout)
	}
	if bud := time.Duration(b.budget.Load()); bud > 0 {
		d = min(d, bud)
	}
	if thr := b.ct.threshold(); thr > 0 {
		d = min(d, thr)
	}
	return d
}

// SetCallBudget records that the dependency's client ends every call it
// makes through this breaker within d, whatever the dependency does (an MCP
// server's OperationBudget: mcpguard sets it). The breaker then treats d as
// Policy.CallTimeout is treated where the policy leaves it unset or longer:
// a half-open probe that has not answered by d has failed, retry_after
// while a probe is out never exceeds it, and a derived slowness threshold
// is capped by it. A d ≤ 0 is ignored; a later call replaces an earlier one.
func (b *Breaker) SetCallBudget(d time.Duration) {
	if d <= 0 {
		return
	}
	b.budget.Store(int64(d))
	c := b.ct
	if c == nil || !c.slow {
		return
	}
	c.mu.Lock()
	c.ceiling = max(MinSlowInFlight, min(c.baseCeiling, d))
	if c.fixed == 0 && c.samples.Load() >= minLatencySamples {
		c.thrNanos.Store(int64(c.derivedLocked()))
	}
	c.mu.Unlock()
}

// shouldTrip is gobreaker's ReadyToTrip: consecutive failures (unless
// switched off), then the failure rate over the count window when there is
// one, else over the time window.
func (b *Breaker) shouldTrip(c gobreaker.Counts) bool {
	if b.readyToTrip(c) {
		b.noteTripWindow(c) // the window the open state's counts no longer show
		return true
	}
	return false
}

func (b *Breaker) readyToTrip(c gobreaker.Counts) bool {
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
	// Stalls counts the trips by the stall rule: completions stopped while
	// calls kept starting (see docs/design.md, "In-flight slowness").
	Stalls uint64
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
		out.Stalls = c.stalls.Load()
		out.SlowThreshold = c.threshold()
	}
	return out
}
