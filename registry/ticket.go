package registry

import (
	"sync"
	"sync/atomic"
	"time"
)

// Ticket is an admitted call awaiting its outcome. It is a small value: copy
// it freely. Reporting is idempotent: only the first Done of a ticket counts,
// whichever copy it is called on, and a probe's lease expiry competes for the
// same single report.
type Ticket struct {
	r   *ticketRec
	seq uint64
	// probe is copied from the record at issue: the record of an ordinary
	// call is pooled, and reading its fields races with its reuse.
	probe bool
}

// ticketRec is pooled for ordinary calls and allocated for probes. A ticket
// is live while seq equals the ticket's seq; reporting moves seq on by one and
// reuse moves it on again, so stale copies never match.
type ticketRec struct {
	seq   atomic.Uint64
	b     *Breaker
	done  func(error)
	gen   uint64    // the breaker's generation at issue (see applyHint, Fresh)
	start time.Time // zero unless Policy.SlowCall is set
	lease time.Time // probes only
	began time.Time // probes only: when the probe was admitted (see probeLeft)
	due   time.Time // probes only, guarded by the breaker's mu: the client's deadline (SetProbeDeadline)
	probe bool
	lat   bool // a latency sample (stats.go)
	// issued is the seq this use was issued under (read by lease expiry).
	issued uint64
	tr     track // contain bookkeeping (contain.go)
}

var ticketPool = sync.Pool{New: func() any { return new(ticketRec) }}

func (b *Breaker) ticket(done func(error), probe bool, lease time.Time) Ticket {
	var r *ticketRec
	if probe {
		r = new(ticketRec)
	} else {
		r = ticketPool.Get().(*ticketRec)
	}
	r.b, r.done, r.probe, r.lease, r.tr = b, done, probe, lease, 0
	r.gen = b.gen.Load()
	if b.pol.SlowCall > 0 {
		r.start = b.reg.clock.Now()
	} else {
		r.start = time.Time{}
	}
	r.lat = b.latencyOn(&r.start)
	// Publish under a new sequence number so copies from a previous use of
	// this record can never match.
	seq := r.seq.Load() + 2
	r.issued = seq
	r.seq.Store(seq)
	return Ticket{r: r, seq: seq, probe: probe}
}

// trackedTicket is a closed-state ticket with its contain bookkeeping.
func (b *Breaker) trackedTicket(done func(error), tr track, start time.Time) Ticket {
	t := b.ticket(done, false, time.Time{})
	t.r.tr = tr
	if !start.IsZero() && t.r.start.IsZero() {
		t.r.start = start
	}
	return t
}

// Valid reports whether t came from an admitted call.
func (t Ticket) Valid() bool { return t.r != nil }

// Probe reports whether t is a half-open probe.
func (t Ticket) Probe() bool {
	return t.probe && t.r.seq.Load() == t.seq
}

// Done reports the call's outcome. It returns false, and does nothing, if the
// ticket was already reported (or expired, for a probe).
func (t Ticket) Done(o Outcome) bool { return t.DoneWithRetryAfter(o, 0) }

// DoneWithRetryAfter reports the outcome together with a server retry hint.
// A failure with a hint is one ordinary failure: it opens the breaker, for
// at least the hint, only as the last of RetryHintFailures consecutive
// failures (at once only if the policy sets TripOnRetryHint true); otherwise
// the hint becomes a floor for the open hold (see Breaker.ObserveRetryAfter),
// which a later success without a hint drops. A hint from a call admitted
// before a Reset is dropped.
func (t Ticket) DoneWithRetryAfter(o Outcome, hint time.Duration) bool {
	r := t.r
	if r == nil || !r.seq.CompareAndSwap(t.seq, t.seq+1) {
		return false
	}
	b, done, start, probe, tr, gen, lat := r.b, r.done, r.start, r.probe, r.tr, r.gen, r.lat
	r.b, r.done = nil, nil
	if !probe {
		ticketPool.Put(r)
	}
	if lat {
		b.observeLatency(o, start)
	}
	var err error
	if tr != 0 {
		err = b.trackedOutcome(tr, o, start, gen)
	} else {
		err = b.outcomeErr(o, start, gen)
	}
	switch {
	case hint > 0 && probe && o == Failure && sameReset(b.gen.Load(), gen):
		// A failed probe with a hint re-opens for at least the hint, with
		// the hint's cause (whether or not the policy trips on hints: a
		// failed probe re-opens either way).
		b.ObserveRetryAfter(hint)
		b.failProbe(done, CauseRetryHint)
	case hint > 0:
		b.applyHint(o, hint, gen) // a trip moves gobreaker on: done below is then ignored
		done(err)
	default:
		b.dropHint(err, gen) // a success: the server answered (see ObserveRetryAfter)
		done(err)
	}
	if probe {
		b.mu.Lock()
		for i, p := range b.probes {
			if p == r {
				b.probes = append(b.probes[:i], b.probes[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
	}
	return true
}

// outcomeErr translates an outcome into the error handed to gobreaker's
// done: a success slower than Policy.SlowCall is a failure. (Retry hints are
// applied by the caller: see applyHint.) It counts the outcome (Reported),
// and as stale (see Fresh) when the breaker's state changed since the call
// was admitted under gen.
func (b *Breaker) outcomeErr(o Outcome, start time.Time, gen uint64) error {
	if o == Success && b.pol.SlowCall > 0 && b.reg.clock.Now().Sub(start) > b.pol.SlowCall {
		o = Failure
	}
	if o > Excluded {
		o = Success // as counted below
	}
	if !b.samePhase(gen) {
		b.stale[o].Add(1) // before reported: Fresh never counts it
	}
	switch o {
	case Failure:
		b.reported[Failure].Add(1)
		return errFailure
	case Excluded:
		b.reported[Excluded].Add(1)
		return errExcluded
	}
	b.reported[Success].Add(1)
	return nil
}
