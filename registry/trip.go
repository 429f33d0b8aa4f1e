package registry

import (
	"errors"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Trip opens the breaker now, before its failure threshold, for hold (capped
// at Policy.MaxRetryHint): the dependency said when to come back — a 429 with
// a retry hint, a quota spent for the day. The open hold is the hint itself,
// not the policy's hold (which is for threshold trips); a breaker already
// open keeps the longer of its hold and the hint. The transition carries
// cause (CauseRetryHint, CauseQuotaExhausted) and goes to subscribers like
// any other. Half-open probes in flight are counted as failed. An isolated
// breaker only records the hold as a floor. A later threshold trip still
// respects the hint as a floor.
//
// The trip counts as one failure of the current generation (which the
// transition then clears).
func (b *Breaker) Trip(hold time.Duration, cause Cause) { b.trip(hold, cause, true, false) }

// trip opens the breaker with cause; exact makes the hold the hint alone
// (Trip), otherwise the policy's hold applies (slowness verdicts, fleet
// rate). closedOnly leaves a breaker that is not closed alone (a half-open
// probe in flight is not failed) and then reports whether this call opened
// it; otherwise it reports whether the breaker is open on return.
func (b *Breaker) trip(hold time.Duration, cause Cause, exact, closedOnly bool) bool {
	if hold > 0 {
		b.ObserveRetryAfter(hold) // the floor the transition will apply
	}
	b.tripMu.Lock()
	defer b.tripMu.Unlock()
	for range 3 { // bounded: a concurrent close can race one attempt
		b.mu.Lock()
		if b.isolated {
			b.mu.Unlock()
			return false
		}
		st := State(b.state.Load())
		if closedOnly && st != StateClosed {
			b.mu.Unlock()
			return false
		}
		if st == StateOpen {
			b.mu.Unlock()
			return true // already open; ObserveRetryAfter extended the hold
		}
		var probes []*ticketRec
		if st == StateHalfOpen {
			probes = append(probes, b.probes...)
			b.probes = b.probes[:0]
		}
		b.nextCause = cause
		b.tripExact = exact
		b.mu.Unlock()

		if st == StateHalfOpen && len(probes) > 0 {
			for _, r := range probes {
				if done, ok := claimProbe(r); ok {
					done(errFailure)
				}
			}
		} else {
			b.forceTrip.Store(true)
			done, err := b.cb.Load().Allow()
			if err == nil {
				done(errFailure)
			} else if !errors.Is(err, gobreaker.ErrTooManyRequests) && !errors.Is(err, gobreaker.ErrOpenState) {
				b.forceTrip.Store(false)
				break
			}
			b.forceTrip.Store(false)
		}
		b.mu.Lock()
		b.nextCause = 0
		b.tripExact = false
		open := State(b.state.Load()) == StateOpen
		b.mu.Unlock()
		if open {
			return true
		}
	}
	b.mu.Lock()
	b.nextCause = 0
	b.tripExact = false
	b.mu.Unlock()
	return State(b.state.Load()) == StateOpen
}
