package registry

import (
	"iter"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// This file is the registry's seam for sharing breaker state between
// replicas of an agent (package fleet). The registry stays free of any
// transport: a fleet layer reads transitions through Subscribe, applies what
// other replicas decided through AdoptOpen and AdoptClose (whose transitions
// carry CauseFleetOpen / CauseFleetClose, so the layer never echoes them
// back), and takes part in half-open admission through a ProbeGate. When
// the failure rate the replicas observe together reaches a policy's gate
// while this replica's breaker is still closed, the layer opens it with
// TripFleet (a local decision, shared like any local trip).

// Causes of transitions applied on behalf of other replicas. They are not
// numbered with the other causes so that new local causes can be added
// without renumbering them.
const (
	// CauseFleetOpen: another replica of the fleet opened this dependency,
	// and this breaker adopted the remaining hold (AdoptOpen).
	CauseFleetOpen Cause = 64 + iota
	// CauseFleetClose: the fleet's probe succeeded on another replica, and
	// this breaker closed with it (AdoptClose).
	CauseFleetClose
	// CauseFleetRate: the failure rate over the outcomes of every replica
	// (this one's and those the others shared) reached the policy's gate
	// while this breaker was still closed, and the fleet layer opened it
	// (TripFleet). Unlike fleet_open it is this replica's own decision.
	CauseFleetRate
	// CauseFleetIsolated: an operator isolated the dependency on another
	// replica of the fleet, and this breaker was isolated with it
	// (AdoptIsolate).
	CauseFleetIsolated
	// CauseFleetReset: an operator reset the dependency on another replica
	// of the fleet, and this breaker was reset with it (AdoptReset).
	CauseFleetReset
)

// fleetCauseName names the fleet causes for Cause.String.
func fleetCauseName(c Cause) (string, bool) {
	switch c {
	case CauseFleetOpen:
		return "fleet_open", true
	case CauseFleetClose:
		return "fleet_close", true
	case CauseFleetRate:
		return "fleet_rate", true
	case CauseFleetIsolated:
		return "fleet_isolated", true
	case CauseFleetReset:
		return "fleet_reset", true
	}
	return "", false
}

// ProbeGate takes part in half-open admission: it is consulted when a call
// would become a half-open probe (the hold has expired), before a probe slot
// is taken. It lets replicas of a fleet run one probe between them.
//
// AllowProbe is called with no registry lock held, on the caller's
// goroutine, so it must not block (no network round-trip): it answers from
// memory and does any remote work asynchronously. When it returns false the
// call is refused with RefusedProbeBusy and RetryAfter wait. The closed path
// never consults it.
type ProbeGate interface {
	AllowProbe(k Key) (ok bool, wait time.Duration)
}

type gateBox struct{ g ProbeGate }

// SetProbeGate installs g as the registry's probe gate, replacing any
// previous one; nil removes it. Without a gate, the local breaker alone
// decides (the default).
func (r *Registry) SetProbeGate(g ProbeGate) {
	if g == nil {
		r.gate.Store(nil)
		return
	}
	r.gate.Store(&gateBox{g})
}

// gateProbe consults the probe gate. refused is true when the gate refused
// the probe; the decision is then the refusal to return.
func (b *Breaker) gateProbe(now time.Time) (d Decision, refused bool) {
	box := b.reg.gate.Load()
	if box == nil {
		return Decision{}, false
	}
	ok, wait := box.g.AllowProbe(b.key)
	if ok {
		return Decision{}, false
	}
	b.mu.Lock()
	cause := b.openCause
	b.mu.Unlock()
	_, d = b.refuse(now, StateHalfOpen, RefusedProbeBusy, max(wait, 0), cause)
	return d, true
}

// AdoptOpen opens the breaker for hold because another replica of the fleet
// opened the same dependency; hold is what remains of that replica's hold.
// It never shortens a longer local hold (an open breaker keeps the later
// end), does nothing to an isolated breaker, and counts local half-open
// probes in flight as failed. The transition's cause is CauseFleetOpen.
// Like Trip, the hold is capped at Policy.MaxRetryHint.
func (b *Breaker) AdoptOpen(hold time.Duration) {
	if hold <= 0 {
		return
	}
	// Trip records the hold as a retry-hint floor; a fleet hold is not a
	// server's hint to this replica, so the previous floor is put back (unless
	// a real hint moved it meanwhile) and AdoptClose is not refused by it.
	b.mu.Lock()
	prev := b.hintUntil
	b.mu.Unlock()
	b.Trip(hold, CauseFleetOpen)
	until := b.reg.clock.Now().Add(min(hold, b.pol.MaxRetryHint))
	b.mu.Lock()
	if !b.hintUntil.After(until) {
		b.hintUntil = prev
		b.hinted.Store(!prev.IsZero())
	}
	b.mu.Unlock()
}

// AdoptClose closes the breaker because the fleet's probe succeeded on
// another replica. It does nothing, and returns false, when the breaker is
// closed or isolated, or while a server's retry hint received by this
// replica still holds it open. Otherwise it starts a fresh closed generation
// (outcomes of calls admitted before are ignored, as after Reset) and
// delivers a transition with cause CauseFleetClose.
func (b *Breaker) AdoptClose() bool {
	now := b.reg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := State(b.state.Load())
	if b.isolated || prev == StateClosed || b.hintUntil.After(now) {
		return false
	}
	b.openUntil = time.Time{}
	b.clearHintLocked() // passed (or the close is refused above): the fleet's probe was answered
	b.reopens = 0
	b.probes = b.probes[:0]
	b.cb.Store(b.newGobreakerLocked())
	b.state.Store(int32(StateClosed))
	b.nextPhaseLocked()
	b.lastChange = now
	b.reg.notify(Transition{Key: b.key, From: prev, To: StateClosed, Cause: CauseFleetClose, At: now})
	return true
}

// TripFleet opens a closed breaker because the failure rate the replicas of
// a fleet observed together reached the policy's gate (FailureRate over at
// least MinCalls outcomes) before this replica's own window did. The hold is
// the policy's, as for a threshold trip (OpenFor, jittered); the
// transition's cause is CauseFleetRate, and it counts as one failure of the
// closed generation, like Trip. A breaker that is not closed (open,
// half-open with a probe out) or is isolated is left alone. It reports
// whether it opened the breaker.
func (b *Breaker) TripFleet() bool { return b.trip(0, CauseFleetRate, false, true) }

// AdoptIsolate isolates the breaker because an operator isolated the same
// dependency on another replica of the fleet: as Isolate, with cause
// CauseFleetIsolated (so the fleet layer does not echo it). It reports
// whether the breaker was not isolated already.
func (b *Breaker) AdoptIsolate() bool { return b.isolate(CauseFleetIsolated) }

// AdoptReset resets the breaker because an operator reset the same
// dependency on another replica of the fleet: as Reset (isolation, hold,
// hint floor and probes end; counts start afresh), with cause
// CauseFleetReset. A closed breaker that is not isolated is left as it is
// (its counts too): it reports whether it reset anything.
func (b *Breaker) AdoptReset() bool { return b.reset(CauseFleetReset, true) }

// Keys returns the keys of every breaker that exists, in no order.
func (r *Registry) Keys() []Key {
	return slices.Collect(maps.Keys(*r.breakers.Load()))
}

// All yields every breaker that exists with its key, in no set order,
// without copying the registry's table (loops that run every few
// milliseconds use it; Keys allocates).
func (r *Registry) All() iter.Seq2[Key, *Breaker] {
	return maps.All(*r.breakers.Load())
}

// gateSlot is embedded in Registry.
type gateSlot = atomic.Pointer[gateBox]
