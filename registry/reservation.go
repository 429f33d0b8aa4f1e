package registry

import "time"

// Reservation is an admitted call for an owner that reports its outcome
// exactly once by construction (the plugin's pending-call table removes an
// entry before reporting it). It is cheaper than a Ticket on the closed path:
// no pooled record and no atomic sequence. Half-open probes still carry a
// leased record, so a probe whose report never comes is expired by its lease,
// and a probe reported after expiry is ignored.
//
// Reporting a Reservation more than once is a bug of the owner (it would be
// counted twice, as in gobreaker). Use Admit and Ticket when reports may
// repeat or race.
type Reservation struct {
	b     *Breaker
	done  func(error)
	gen   uint64 // the breaker's generation at admission
	start time.Time
	probe Ticket // valid only for half-open probes
	tr    track  // contain bookkeeping (contain.go)
	lat   bool   // a latency sample (stats.go)
}

// Reserve is Admit for exactly-once owners. The refused path is Admit's.
func (b *Breaker) Reserve() (Reservation, Decision) {
	var r Reservation
	if b.TryReserve(&r) {
		return r, Decision{Allowed: true, State: StateClosed}
	}
	t, d := b.admitSlow()
	if !d.Allowed || d.Shadow {
		return Reservation{}, d
	}
	return Reservation{b: b, probe: t}, d
}

// TryReserve is the closed-state fast path of Reserve: when the breaker is
// closed it admits the call into *r (which the caller owns, typically a slot
// of its own table, so nothing is copied) and returns true. Otherwise it
// leaves *r alone and returns false, and the caller goes through Reserve for
// the slow path (probes and refusals).
func (b *Breaker) TryReserve(r *Reservation) bool {
	if State(b.state.Load()) != StateClosed {
		return false
	}
	if b.ct != nil {
		return b.tryReserveContained(r)
	}
	gen := b.gen.Load() // before admission: see applyHint
	done, ok := b.allowClosed()
	if !ok {
		return false
	}
	r.b, r.done, r.probe, r.tr, r.gen = b, done, Ticket{}, 0, gen
	r.start = time.Time{}
	if b.pol.SlowCall > 0 { // start is read only when SlowCall is set
		r.start = b.reg.clock.Now()
	}
	r.lat = b.latencyOn(&r.start)
	return true
}

// Valid reports whether r came from an admitted call.
func (r Reservation) Valid() bool { return r.b != nil }

// Probe reports whether r is a half-open probe. An owner that must drop
// entries to bound its memory drops ordinary calls, never probes: releasing
// a probe unreported frees its slot and admits a second probe while the
// first is still running.
// Ordinary calls admitted on the slow path (after a bulkhead wait, or closed
// while a probe was asked for) carry a ticket too, so the probe flag copied
// at issue decides, not the ticket's presence.
func (r *Reservation) Probe() bool { return r.probe.Valid() && r.probe.probe }

// Report reports the outcome with an optional server retry hint (0 for none;
// see Ticket.DoneWithRetryAfter for what a hint does).
func (r *Reservation) Report(o Outcome, hint time.Duration) {
	if r.b == nil {
		return
	}
	if r.probe.Valid() {
		r.probe.DoneWithRetryAfter(o, hint)
		return
	}
	if r.lat {
		r.b.observeLatency(o, r.start)
	}
	if hint > 0 {
		r.b.applyHint(o, hint, r.gen) // a trip moves gobreaker on: the report below is then ignored
	}
	var err error
	if r.tr != 0 {
		err = r.b.trackedOutcome(r.tr, o, r.start, r.gen)
	} else {
		err = r.b.outcomeErr(o, r.start, r.gen)
	}
	if hint <= 0 {
		r.b.dropHint(err, r.gen) // a success: the server answered (see ObserveRetryAfter)
	}
	r.done(err)
}

// Trip opens the breaker for hold with cause (see Breaker.Trip), unless r
// was admitted before a Reset: an outcome of a call the fresh breaker never
// admitted must not open it. The caller still reports r (that report is then
// ignored, as the trip counted the failure).
func (r *Reservation) Trip(hold time.Duration, cause Cause) {
	if r.b == nil {
		return
	}
	gen := r.gen
	if r.probe.Valid() {
		gen = r.probe.r.gen
	}
	if !sameReset(r.b.gen.Load(), gen) {
		return
	}
	r.b.Trip(hold, cause)
}

// Closed reports, without locking, whether the breaker is closed right now.
// Hot paths use it to skip work that only the closed state needs.
func (b *Breaker) Closed() bool { return State(b.state.Load()) == StateClosed }

// Admissible reports, without locking and without admitting anything,
// whether TryReserve would most likely admit a call right now: the breaker
// is closed and its bulkhead, if any, has a free slot. A layer that admits
// calls later than it decides refusals (the plugin's guarded tools admit in
// the tool's Run) uses it to refuse early what is refused anyway; the
// answer can be stale by the time of TryReserve, which has the last word.
func (b *Breaker) Admissible() bool {
	if State(b.state.Load()) != StateClosed {
		return false
	}
	c := b.ct
	return c == nil || c.max == 0 || uint32(c.word.Load()&wordTotalMask) < c.max
}

// SetSelfAdmitting records that a client of this breaker admits its own
// calls unless an Admission layer already did (it consults
// Registry.Admitted, as mcpguard does). A layer that admits a call
// somewhere other than where its Admission can see it (the plugin's guarded
// tools admit in the tool's Run) then registers the call so that
// Registry.Admitted finds it. Registry.Admitted sets it too, on first use:
// call it at construction so that no call is admitted before it is known.
func (b *Breaker) SetSelfAdmitting() { b.selfAdmit.Store(true) }

// SelfAdmitting reports whether SetSelfAdmitting was called (or
// Registry.Admitted consulted) for this breaker.
func (b *Breaker) SelfAdmitting() bool { return b.selfAdmit.Load() }
