package registry

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Outcome classifies a finished call for the breaker.
type Outcome uint8

const (
	// Success: the dependency answered. Business errors ("no result",
	// "not found" answers) are successes of the dependency.
	Success Outcome = iota
	// Failure: the dependency failed (transport error, timeout at a deadline
	// we set, 5xx, 429). Failures count toward tripping.
	Failure
	// Excluded: neither (caller cancellation, argument validation, a call that
	// was abandoned). It frees a half-open probe slot without deciding.
	Excluded
)

// String returns "success", "failure" or "excluded".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Excluded:
		return "excluded"
	default:
		return "outcome(?)"
	}
}

// Sentinel errors handed to gobreaker's done; never seen by users.
var (
	errFailure  = errors.New("registry: failure")
	errExcluded = errors.New("registry: excluded")
)

// gb is the gobreaker type underneath every Breaker.
type gb = gobreaker.TwoStepCircuitBreaker[struct{}]

// Breaker guards one dependency. It wraps a gobreaker TwoStepCircuitBreaker
// and adds what gobreaker lacks: open holds with growth, jitter and a retry
// hint floor; probe leases so half-open cannot wedge; idempotent reporting;
// operator isolate and reset; ordered transition notifications delivered
// outside any lock.
//
// A Breaker is safe for concurrent use. Obtain one from Registry.Get.
type Breaker struct {
	key Key
	reg *Registry
	pol Policy // resolved (WithDefaults); immutable

	// state is the public state, read lock-free on the admitted fast path.
	// Written only with mu held.
	state atomic.Int32
	// cb is the current gobreaker; replaced by Reset.
	cb atomic.Pointer[gb]

	// refusals counts refusals by Refusal; touched only on the refused
	// path (stats.go).
	refusals [NumRefusals]atomic.Uint64
	// latEvery and latHist are the opt-in latency sampling (stats.go):
	// latEvery is 0 (off) or a power of two; latHist is allocated when
	// sampling is first switched on.
	latEvery atomic.Uint32
	latHist  atomic.Pointer[[LatencyBuckets]atomic.Uint64]
	// shadowRefusals counts calls a shadow-mode breaker would have refused.
	shadowRefusals atomic.Uint64
	// reported counts reported outcomes since creation, by the outcome the
	// breaker counted (a slow success is a failure): Success, Failure,
	// Excluded.
	reported [3]atomic.Uint64
	// forceTrip makes the next failure trip (Trip); false otherwise.
	forceTrip atomic.Bool
	// tripMu serialises Trip calls.
	tripMu sync.Mutex

	// Lock order: gobreaker's mutex → mu → registry notifier mutex; the
	// latency estimators' mutexes (contain.mu, observed.mu) are leaves. Code
	// holding mu never calls into gobreaker.
	mu        sync.Mutex
	cbGen     uint64        // Guarded by mu: identifies the live gobreaker.
	isolated  bool          // Guarded by mu.
	openUntil time.Time     // Guarded by mu: end of the open hold.
	openLen   time.Duration // Guarded by mu: length of the open hold as set (bounds the wait when the clock steps back).
	hintUntil time.Time     // Guarded by mu: floor from retry hints (see ObserveRetryAfter).
	reopens   int           // Guarded by mu: re-trips since the last close.
	probes    []*ticketRec  // Guarded by mu: outstanding half-open probes.
	nextCause Cause         // Guarded by mu: cause for the next callback transition.
	openCause Cause         // Guarded by mu: what opened the breaker last (0 while closed).
	// gen is the breaker's generation: Resets in its high 32 bits, state
	// changes (any transition, Resets included) in its low 32 bits, wrapping.
	// Reports carry the gen they were admitted under, so a retry hint from
	// before a Reset never applies to the fresh breaker (sameReset), and an
	// outcome of a call admitted before the last state change is known as
	// stale (the state's window ignored it; see Fresh). Written only with mu
	// held.
	gen atomic.Uint64
	// stale counts reported outcomes of calls admitted before a later state
	// change, by outcome, as reported counts them.
	stale      [3]atomic.Uint64
	tripExact  bool      // Guarded by mu: Trip in progress: hold = the hint only.
	lastChange time.Time // Guarded by mu.
	trips      uint64    // Guarded by mu: times opened.
	// tripWindow is the window ReadyToTrip last tripped on; lastTrip the
	// last trip from closed (stats.go). Guarded by mu.
	tripWindow Counts
	lastTrip   TripRecord
	created    time.Time // immutable

	// ct is outage containment (bulkhead, in-flight slowness, count
	// window); nil when the policy uses none (contain.go).
	ct *contain
	// hc is the dependency's health check, used as the half-open probe; nil
	// when it has none (healthcheck.go).
	hc              HealthCheck
	hcRuns, hcFails atomic.Uint64
	// selfAdmit: a client admits its own calls unless an Admission did
	// (SetSelfAdmitting).
	selfAdmit atomic.Bool
	// budget is the client's call budget in nanoseconds (SetCallBudget);
	// 0 for none.
	budget atomic.Int64
	// observed is the healthy latency the client measured (ObserveLatency);
	// nil until it reports one, and again after a Reset (probewait.go).
	observed atomic.Pointer[observedLatency]
	// hinted is true while hintUntil may be set: a success reported on the
	// closed path reads it (one atomic load) and takes mu to drop the
	// floor only then (dropHint). Written only with mu held.
	hinted atomic.Bool
}

func newBreaker(r *Registry, key Key, pol Policy) *Breaker {
	if t := pol.TripOnRetryHint; t != nil {
		v := *t // the breaker's own copy: never the caller's bool
		pol.TripOnRetryHint = &v
	}
	b := &Breaker{key: key, reg: r, pol: pol, ct: newContain(&pol), hc: r.health[key]}
	b.lastChange = r.clock.Now()
	b.created = b.lastChange
	b.cb.Store(b.newGobreakerLocked())
	return b
}

// newGobreakerLocked builds a gobreaker bound to a new generation. Caller
// holds mu (or owns b exclusively).
func (b *Breaker) newGobreakerLocked() *gb {
	b.cbGen++
	gen := b.cbGen
	pol := &b.pol
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         string(b.key),
		MaxRequests:  uint32(pol.HalfOpenProbes),
		Interval:     pol.Window,
		BucketPeriod: pol.Window / windowBuckets,
		// The hold is ours: gobreaker may go half-open at once, and Breaker
		// admits a probe only when its own hold has expired.
		Timeout:      time.Nanosecond,
		ReadyToTrip:  b.shouldTrip,
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err != nil && err == errExcluded }, // a success (nil) skips the interface comparison
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.onGobreakerChange(gen, from, to)
		},
	})
}

// onGobreakerChange runs under gobreaker's mutex. It must not call into
// gobreaker; it takes mu, updates the public state and enqueues the
// transition.
func (b *Breaker) onGobreakerChange(gen uint64, from, to gobreaker.State) {
	now := b.reg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.cbGen || b.isolated {
		return // a superseded gobreaker, or the operator owns the state
	}
	prev := State(b.state.Load())
	b.ct.resetWindow()
	switch to {
	case gobreaker.StateOpen:
		cause := CauseTrip
		if from == gobreaker.StateHalfOpen {
			b.reopens++
			cause = CauseProbeFailed
		} else {
			b.reopens = 0
		}
		if b.nextCause != 0 {
			cause, b.nextCause = b.nextCause, 0
		}
		var hold time.Duration
		if !b.tripExact { // Trip: the hint alone sets the hold
			hold = b.pol.hold(b.reopens)
			if b.pol.OpenJitter > 0 {
				hold = b.pol.jitter(hold, b.reg.rand())
			}
		}
		// Consumed like nextCause: a later trip (after a Reset, before Trip
		// has cleaned up) must get its policy hold, not a zero one.
		b.tripExact = false
		until := now.Add(hold)
		if b.hintUntil.After(until) {
			// A hint floor is at most MaxRetryHint from now, even when the
			// clock stepped back since the hint was recorded.
			until = minTime(b.hintUntil, now.Add(b.pol.MaxRetryHint))
		}
		b.openUntil, b.openLen = until, until.Sub(now)
		b.openCause = cause
		b.probes = b.probes[:0]
		b.trips++
		if from == gobreaker.StateClosed {
			b.lastTrip = TripRecord{At: now, Cause: cause, Window: b.tripWindow}
		}
		b.tripWindow = Counts{}
		b.setStateLocked(prev, StateOpen, cause, now, until.Sub(now))
	case gobreaker.StateClosed:
		b.reopens = 0
		b.probes = b.probes[:0]
		b.openUntil = time.Time{}
		b.openCause = 0
		b.clearHintLocked() // the probe was answered: the server takes calls again
		b.setStateLocked(prev, StateClosed, CauseProbeSucceeded, now, 0)
	case gobreaker.StateHalfOpen:
		// Public half-open is entered by admitSlow when the hold expires.
	}
}

func (b *Breaker) setStateLocked(from, to State, cause Cause, now time.Time, retryAfter time.Duration) {
	if from == to && cause != CauseTrip {
		return
	}
	b.state.Store(int32(to))
	b.nextPhaseLocked()
	b.lastChange = now
	b.reg.notify(Transition{Key: b.key, From: from, To: to, Cause: cause, At: now, RetryAfter: retryAfter})
}

// Key returns the dependency key.
func (b *Breaker) Key() Key { return b.key }

// Policy returns the resolved policy (defaults filled in).
func (b *Breaker) Policy() Policy { return b.pol }

// Admit asks whether a call may proceed. When Decision.Allowed is true the
// caller must report the returned Ticket exactly once (later reports are
// ignored; an unreported probe is counted as failed at lease expiry). When
// refused, the Decision says why and for how long; the refused path does not
// allocate.
func (b *Breaker) Admit() (Ticket, Decision) {
	if State(b.state.Load()) == StateClosed {
		if done, tr, start, _, ok := b.admitClosed(false); ok {
			return b.trackedTicket(done, tr, start), Decision{Allowed: true, State: StateClosed}
		}
	}
	return b.admitSlow()
}

// allowClosed admits a call through gobreaker while the breaker is closed.
// A call that raced with a trip (gobreaker may have admitted it as an early
// probe) is released without deciding, and ok is false.
func (b *Breaker) allowClosed() (done func(error), ok bool) {
	done, err := b.cb.Load().Allow()
	if err != nil {
		return nil, false
	}
	if State(b.state.Load()) != StateClosed {
		done(errExcluded)
		return nil, false
	}
	return done, true
}

// Allow is Admit with the refusal as an error (*OpenError, matching ErrOpen).
func (b *Breaker) Allow() (Ticket, error) {
	t, d := b.Admit()
	if !d.Allowed {
		return Ticket{}, d.Err(b.key)
	}
	return t, nil
}

func (b *Breaker) admitSlow() (Ticket, Decision) {
	for attempt := 0; ; attempt++ {
		now := b.reg.clock.Now()
		b.mu.Lock()
		if b.isolated {
			b.mu.Unlock()
			return b.refuse(now, StateOpen, RefusedIsolated, UntilReset, CauseIsolated)
		}
		st := State(b.state.Load())
		switch st {
		case StateClosed:
			b.mu.Unlock()
			if attempt > 2 {
				// Pathological churn; refuse rather than spin.
				return b.refuse(now, StateClosed, RefusedOpen, time.Second, 0)
			}
			done, tr, start, saturated, ok := b.admitClosed(true)
			if ok {
				return b.trackedTicket(done, tr, start), Decision{Allowed: true, State: StateClosed}
			}
			if saturated {
				// A full bulkhead may be full of hung calls: a refusal
				// evaluates the slowness ring (when due) like an admission,
				// or a hang that fills the bulkhead would never be judged.
				if b.checkSlow() {
					continue // opened: refused as open, with the hold
				}
				return b.refuse(now, StateClosed, RefusedSaturated, SaturatedRetryAfter, 0)
			}
			continue
		case StateOpen:
			if wait := b.openWaitLocked(now); wait > 0 {
				cause := b.openCause
				b.mu.Unlock()
				return b.refuse(now, StateOpen, RefusedOpen, wait, cause)
			}
			// Hold expired: enter half-open before admitting, so the
			// transition is ordered before the probe's own outcome.
			b.setStateLocked(StateOpen, StateHalfOpen, CauseHoldExpired, now, 0)
			b.mu.Unlock()
		case StateHalfOpen:
			expired := b.expiredProbesLocked(now)
			b.mu.Unlock()
			if len(expired) > 0 {
				for _, r := range expired {
					b.expire(r)
				}
				continue
			}
		}
		if b.hc != nil {
			return b.healthProbe(now)
		}
		return b.probe(now)
	}
}

// probe tries to take a half-open slot from gobreaker.
func (b *Breaker) probe(now time.Time) (Ticket, Decision) {
	if d, refused := b.gateProbe(now); refused {
		return Ticket{}, d
	}
	cb := b.cb.Load()
	done, err := cb.Allow()
	switch {
	case err == nil:
		b.mu.Lock()
		switch State(b.state.Load()) {
		case StateHalfOpen:
		case StateClosed:
			b.mu.Unlock()
			// Closed meanwhile: an ordinary call.
			return b.ticket(done, false, time.Time{}), Decision{Allowed: true, State: StateClosed}
		default:
			// Re-opened (a probe failed) or isolated since the hold
			// expired. gobreaker's 1ns timeout has already let us into its
			// next half-open generation, but our hold has not expired:
			// release the slot without deciding, and refuse.
			why, wait, cause := RefusedOpen, b.openWaitLocked(now), b.openCause
			if b.isolated {
				why, wait, cause = RefusedIsolated, UntilReset, CauseIsolated
			}
			b.mu.Unlock()
			done(errExcluded)
			return b.refuse(now, StateOpen, why, max(wait, 0), cause)
		}
		lease := now.Add(b.probeTimeout())
		t := b.ticket(done, true, lease)
		t.r.began = now // read under mu, from b.probes
		b.probes = append(b.probes, t.r)
		b.mu.Unlock()
		return t, Decision{Allowed: true, State: StateHalfOpen}
	case errors.Is(err, gobreaker.ErrTooManyRequests):
		b.mu.Lock()
		wait := b.probesLeftLocked(now)
		cause := b.openCause
		b.mu.Unlock()
		return b.refuse(now, StateHalfOpen, RefusedProbeBusy, max(wait, 0), cause)
	default: // ErrOpenState: within gobreaker's 1ns timeout of a trip (or under frozen synctest time), or around a Reset
		b.mu.Lock()
		cause := b.openCause
		b.mu.Unlock()
		return b.refuse(now, StateOpen, RefusedOpen, b.pol.OpenFor, cause)
	}
}

func (b *Breaker) refuse(now time.Time, st State, why Refusal, wait time.Duration, cause Cause) (Ticket, Decision) {
	if b.pol.Shadow {
		b.shadowRefusals.Add(1)
		return Ticket{}, Decision{Allowed: true, Shadow: true, State: st, Reason: why, RetryAfter: wait, At: now, Cause: cause}
	}
	b.refusals[why].Add(1) // why < NumRefusals: every refusal passes a constant
	return Ticket{}, Decision{State: st, Reason: why, RetryAfter: wait, At: now, Cause: cause}
}

// expiredProbesLocked removes and returns probes whose lease has expired.
func (b *Breaker) expiredProbesLocked(now time.Time) []*ticketRec {
	var out []*ticketRec
	kept := b.probes[:0]
	for _, r := range b.probes {
		if !now.Before(r.lease) {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	clear(b.probes[len(kept):])
	b.probes = kept
	return out
}

// openWaitLocked returns what remains of the open hold at now. The wait
// never exceeds the hold's length as it was set: a clock that stepped
// backwards (a custom Clock, a VM restored from a snapshot) re-anchors the
// hold at now instead of stretching it past MaxOpenFor or MaxRetryHint.
// Caller holds mu.
func (b *Breaker) openWaitLocked(now time.Time) time.Duration {
	w := b.openUntil.Sub(now)
	if w > b.openLen {
		b.openUntil, w = now.Add(b.openLen), b.openLen
	}
	return w
}

func minTime(a, c time.Time) time.Time {
	if c.Before(a) {
		return c
	}
	return a
}

// claimProbe takes the single report of a probe, unless its real outcome (or
// another claim) won the race.
func claimProbe(r *ticketRec) (done func(error), ok bool) {
	if !r.seq.CompareAndSwap(r.issued, r.issued+1) {
		return nil, false
	}
	done, r.done = r.done, nil
	return done, true
}

// expire reports a probe whose lease ran out as a failure, unless its real
// outcome won the race.
func (b *Breaker) expire(r *ticketRec) {
	done, ok := claimProbe(r)
	if !ok {
		return
	}
	b.failProbe(done, CauseLeaseExpired)
}

// failProbe reports a claimed probe as failed, its re-open carrying cause.
func (b *Breaker) failProbe(done func(error), cause Cause) {
	b.mu.Lock()
	b.nextCause = cause
	b.mu.Unlock()
	done(errFailure)
	b.mu.Lock()
	b.nextCause = 0
	b.mu.Unlock()
}

// applyHint applies a server retry hint reported with an outcome of a call
// admitted under Reset generation gen. A hint from a call admitted before a
// Reset is dropped: the fresh breaker owes it nothing. A failure with a hint
// opens the breaker, for at least the hint, only as the last of
// RetryHintFailures consecutive failures (the default), or at once for the
// hint (Trip with CauseRetryHint) when the policy opts in with
// TripOnRetryHint true. In
// every other case the hint only sets a floor for the hold
// (ObserveRetryAfter). It reports whether it tripped.
func (b *Breaker) applyHint(o Outcome, hint time.Duration, gen uint64) bool {
	if hint <= 0 || !sameReset(b.gen.Load(), gen) {
		return false
	}
	if o == Failure {
		if b.pol.tripsOnHint() {
			b.Trip(hint, CauseRetryHint)
			return true
		}
		// This failure is not counted yet: it is the streak's last.
		if b.Closed() && int(b.cb.Load().Counts().ConsecutiveFailures)+1 >= b.pol.RetryHintFailures {
			return b.trip(hint, CauseRetryHint, false, true)
		}
	}
	b.ObserveRetryAfter(hint)
	return false
}

// ObserveRetryAfter records a server's retry hint (Retry-After, RetryInfo).
// The hint becomes a floor for the open hold: the breaker stays open for at
// least max(hint, configured hold) from now; a later, shorter hint never
// shortens it. Hints are capped at Policy.MaxRetryHint.
//
// The floor holds while the hint is current and the server has not answered
// since: an open breaker is held until it has passed, and so is an opening
// it causes later — the hinted failure's streak, or the breaker's
// thresholds — while it is still in the future. A success reported while
// the breaker is closed (a call admitted since its last state change, and
// reported without a hint of its own) drops the floor, and so does a close
// after a successful probe: the server answered again, and a later trip
// gets the policy's hold (cause trip), not what remains of an old hint.
// Reset drops it too.
func (b *Breaker) ObserveRetryAfter(d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, b.pol.MaxRetryHint)
	now := b.reg.clock.Now()
	until := now.Add(d)
	b.mu.Lock()
	if until.After(b.hintUntil) {
		b.hintUntil = until
		b.hinted.Store(true)
	}
	if State(b.state.Load()) == StateOpen && until.After(b.openUntil) {
		b.openUntil = until
		b.openLen = max(b.openLen, d)
	}
	b.mu.Unlock()
}

// clearHintLocked drops the retry-hint floor. Caller holds mu.
func (b *Breaker) clearHintLocked() {
	b.hintUntil = time.Time{}
	b.hinted.Store(false)
}

// dropHint drops the retry-hint floor on a success (o counted as err, nil
// for a success) reported without a hint by a call admitted under
// generation gen, when the breaker is still closed in that generation's
// state (see ObserveRetryAfter). The closed path pays one atomic load.
func (b *Breaker) dropHint(err error, gen uint64) {
	if err == nil && b.hinted.Load() {
		b.dropHintSlow(gen)
	}
}

func (b *Breaker) dropHintSlow(gen uint64) {
	b.mu.Lock()
	if State(b.state.Load()) == StateClosed && !b.isolated && b.samePhase(gen) {
		b.clearHintLocked()
	}
	b.mu.Unlock()
}

// Isolate forces the dependency open until Reset, whatever its outcomes.
func (b *Breaker) Isolate() { b.isolate(CauseIsolated) }

// isolate isolates the breaker; cause is the transition's (CauseIsolated,
// or CauseFleetIsolated when another replica's operator isolated it).
func (b *Breaker) isolate(cause Cause) bool {
	now := b.reg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isolated {
		return false
	}
	prev := State(b.state.Load())
	b.isolated = true
	b.openCause = CauseIsolated
	b.probes = b.probes[:0]
	b.state.Store(int32(StateOpen))
	b.nextPhaseLocked()
	b.lastChange = now
	b.reg.notify(Transition{Key: b.key, From: prev, To: StateOpen, Cause: cause, At: now})
	return true
}

// Reset returns the dependency to closed with fresh counts, ending any
// isolation, hold, hint floor and outstanding probes. Outcomes of calls
// admitted before the reset are ignored. The healthy latencies a client
// reported (ObserveLatency) are dropped: an operator's reset says the
// dependency changed (a deployment, another model), so the time a probe is
// expected to take is learned again. The in-flight slowness detector keeps
// the tail it measured: forgetting it would disarm the detector until 8
// new healthy calls, and a dependency reset while it still hangs returns
// none (see Policy.SlowInFlightFactor).
func (b *Breaker) Reset() { b.reset(CauseReset, false) }

// reset resets the breaker; cause is the transition's (CauseReset, or
// CauseFleetReset when another replica's operator reset it). With
// unlessClosed, a closed breaker that is not isolated is left as it is.
func (b *Breaker) reset(cause Cause, unlessClosed bool) bool {
	now := b.reg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := State(b.state.Load())
	if unlessClosed && prev == StateClosed && !b.isolated {
		return false
	}
	b.isolated = false
	b.openCause = 0
	b.openUntil = time.Time{}
	b.clearHintLocked()
	b.observed.Store(nil) // the client's latencies: learned again (see Reset)
	b.reopens = 0
	b.probes = b.probes[:0]
	b.cb.Store(b.newGobreakerLocked())
	b.gen.Add(1 << 32) // after the swap: a call admitted by the old gobreaker carries an older gen
	b.nextPhaseLocked()
	b.ct.resetWindow()
	b.state.Store(int32(StateClosed))
	b.lastChange = now
	b.reg.notify(Transition{Key: b.key, From: prev, To: StateClosed, Cause: cause, At: now})
	return true
}

// State returns the public state. A breaker whose hold has expired reports
// half-open: the next call is a probe. Reading the state also expires
// overdue probe leases.
func (b *Breaker) State() State {
	st, _ := b.stateAndWait()
	return st
}

// RetryAfter returns the time until the breaker next admits a probe: the
// remaining open hold or, while the half-open probes are out, the time they
// are expected still to take (see MinProbeRetryAfter); zero when calls are
// admitted now; UntilReset while an operator isolates the dependency.
func (b *Breaker) RetryAfter() time.Duration {
	_, w := b.stateAndWait()
	return w
}

func (b *Breaker) stateAndWait() (State, time.Duration) {
	if State(b.state.Load()) == StateClosed && !b.checkSlow() {
		// Closed: nothing to wait for and no lease to expire. (Isolate stores
		// StateOpen, so an isolated breaker never takes this path.) Calls
		// outstanding past the slowness threshold may trip it first.
		return StateClosed, 0
	}
	// gobreaker hands out HalfOpenProbes slots per half-open episode: a slot
	// is freed by an excluded outcome, not by a success. Read how many are
	// taken before taking mu (lock order: gobreaker, then mu).
	var taken int
	if State(b.state.Load()) == StateHalfOpen {
		c := b.cb.Load().Counts()
		taken = int(c.Requests - min(c.TotalExclusions, c.Requests))
	}
	now := b.reg.clock.Now()
	b.mu.Lock()
	if b.isolated {
		b.mu.Unlock()
		return StateOpen, UntilReset // until an operator resets it: no retry time is true
	}
	st := State(b.state.Load())
	switch st {
	case StateOpen:
		w := b.openWaitLocked(now)
		b.mu.Unlock()
		if w <= 0 {
			return StateHalfOpen, 0
		}
		return StateOpen, w
	case StateHalfOpen:
		expired := b.expiredProbesLocked(now)
		if len(expired) > 0 {
			b.mu.Unlock()
			for _, r := range expired {
				b.expire(r)
			}
			return b.stateAndWait()
		}
		if max(taken, len(b.probes)) < b.pol.HalfOpenProbes {
			b.mu.Unlock()
			return StateHalfOpen, 0
		}
		w := b.probesLeftLocked(now)
		b.mu.Unlock()
		return StateHalfOpen, max(w, 0)
	default:
		b.mu.Unlock()
		return StateClosed, 0
	}
}

// Fresh returns Reported without the outcomes of calls admitted before
// the breaker's state last changed before they were reported (a call
// admitted while closed that returns after a trip, or after the breaker
// closed again): the outcomes each state's window counted, or would have
// counted, as the state they were admitted in. A call admitted just as the
// state changed may be left out. The difference of two reads counts the
// outcomes between them; it never exceeds what was reported fresh.
func (b *Breaker) Fresh() [3]uint64 {
	var out [3]uint64
	for i := range out {
		r := b.reported[i].Load() // before stale: outcomeErr counts stale first
		out[i] = r - min(b.stale[i].Load(), r)
	}
	return out
}

// nextPhaseLocked marks a state change in the generation (its low 32 bits,
// wrapping without touching the Reset count). Caller holds mu.
func (b *Breaker) nextPhaseLocked() {
	g := b.gen.Load()
	b.gen.Store(g&^(1<<32-1) | uint64(uint32(g)+1))
}

// samePhase reports whether the breaker's state is still the one of
// generation gen (no state change since).
func (b *Breaker) samePhase(gen uint64) bool { return uint32(b.gen.Load()) == uint32(gen) }

// sameReset reports whether generations a and c are of the same Reset.
func sameReset(a, c uint64) bool { return a>>32 == c>>32 }

// Counts are a breaker's counters.
type Counts struct {
	// Requests, Successes, Failures, Exclusions and ConsecutiveFailures count
	// the current state's generation (the rolling window while closed), as
	// gobreaker keeps them.
	Requests, Successes, Failures, Exclusions uint32
	ConsecutiveFailures                       uint32
	// ShortCircuits is the total number of refused calls since creation.
	ShortCircuits uint64
	// Trips is how many times the breaker opened since creation.
	Trips uint64
	// ShadowRefusals is how many calls a breaker in shadow mode
	// (Policy.Shadow) would have refused, and admitted, since creation.
	ShadowRefusals uint64
}

// Reported returns how many outcomes were reported since the breaker was
// created, indexed by Outcome (Success, Failure, Excluded), as the breaker
// counted them: a success slower than Policy.SlowCall is a failure.
// Together with Counts.ShortCircuits they are every call's fate, for
// dashboards. Three atomic loads; no lock.
func (b *Breaker) Reported() [3]uint64 {
	return [3]uint64{b.reported[Success].Load(), b.reported[Failure].Load(), b.reported[Excluded].Load()}
}

// Counts returns the breaker's counters.
func (b *Breaker) Counts() Counts {
	c := b.cb.Load().Counts()
	b.mu.Lock()
	trips := b.trips
	b.mu.Unlock()
	return Counts{
		Requests: c.Requests, Successes: c.TotalSuccesses, Failures: c.TotalFailures,
		Exclusions: c.TotalExclusions, ConsecutiveFailures: c.ConsecutiveFailures,
		ShortCircuits: b.shortCircuitTotal(), Trips: trips, ShadowRefusals: b.shadowRefusals.Load(),
	}
}

// Status is a point-in-time view of one dependency, for payloads and operators.
type Status struct {
	Key      Key
	State    State
	Isolated bool
	// Cause is what opened the breaker last — CauseTrip, CauseProbeFailed,
	// CauseLeaseExpired, CauseRetryHint, CauseQuotaExhausted or
	// CauseIsolated — while it is open or half-open; zero while closed.
	Cause Cause
	// RetryAfter is the time until the breaker next admits a probe (see
	// Breaker.RetryAfter): zero when calls are admitted now, UntilReset for
	// an isolated dependency (which admits nothing until an operator resets
	// it).
	RetryAfter time.Duration
	// Since is when the state last changed.
	Since time.Time
	// HoldEnded is true when the breaker is open and its hold is over: the
	// next call is admitted as the probe, so State reads StateHalfOpen, but
	// no transition has happened yet (it happens when that call comes), and
	// Since, the transitions and the log still say open. Operator views
	// (the status page, /healthz) show such a breaker as open with a probe
	// due.
	HoldEnded bool
	Counts    Counts
}

// Status returns a snapshot of the breaker.
func (b *Breaker) Status() Status {
	st, w := b.stateAndWait()
	c := b.Counts()
	b.mu.Lock()
	s := Status{Key: b.key, State: st, Isolated: b.isolated, Cause: b.openCause, RetryAfter: w, Since: b.lastChange, Counts: c}
	s.HoldEnded = st == StateHalfOpen && State(b.state.Load()) == StateOpen && !b.isolated
	if st == StateClosed {
		s.Cause = 0
	}
	b.mu.Unlock()
	return s
}

// PendingProbes returns how many half-open probes are awaiting an outcome.
func (b *Breaker) PendingProbes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.probes)
}
