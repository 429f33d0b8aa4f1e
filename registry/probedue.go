package registry

import "time"

// SetProbeDeadline records that r, a half-open probe, is bound to end by at
// whatever the dependency does: its client cuts it then (a failover
// model's Timeout or stall deadline). While the probe is out, the wait of a
// call refused for it (Decision.RetryAfter, Breaker.RetryAfter, Status)
// then never runs past at, as it never runs past the probe's lease. A
// later call replaces the deadline (a stream that progressed moves it); the
// zero time forgets it. The lease is unchanged: the probe still counts as
// failed only when it expires. A no-op for an ordinary call.
func (r *Reservation) SetProbeDeadline(at time.Time) {
	if !r.Probe() {
		return
	}
	t := r.probe
	r.b.mu.Lock()
	if t.r.seq.Load() == t.seq {
		t.r.due = at
	}
	r.b.mu.Unlock()
}

// bound is the latest time a probe's refused callers are told to wait for:
// its lease, or its client's deadline when that is earlier. Caller holds
// the breaker's mu.
func (r *ticketRec) bound() time.Time {
	if !r.due.IsZero() && r.due.Before(r.lease) {
		return r.due
	}
	return r.lease
}
