package failover

import (
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// refused says why a call the endpoint's breaker refused skips it, and when
// the endpoint may be tried again. While a recovering endpoint's trial call
// (the half-open probe) is in flight, the breaker's circuit turns the call
// away, whatever opened it first (a retry hint, a quota, failures): the
// reason is circuit_open, and the wait is the time the probe is expected
// still to take — the p99 of the endpoint's healthy latency, which every
// successful call reports (Breaker.ObserveLatency), less the time the probe
// has run, at least registry.MinProbeRetryAfter — never past what remains
// of the probe's own deadline (its Timeout or stall deadline), which is the
// wait while the endpoint's latency is not known. The policy's ProbeLease
// is only a backstop.
func (m *Model) refused(ep *endpoint, d registry.Decision) (Reason, time.Duration) {
	if d.State == registry.StateHalfOpen && d.Reason == registry.RefusedProbeBusy {
		return ReasonCircuitOpen, ep.probeWait(m.clock, d.RetryAfter)
	}
	return ep.refusalReason(d.Cause), d.RetryAfter
}

// probeWait caps w (the breaker's wait for its probe: its expected
// remaining time, or its remaining lease) by what remains of the in-flight
// probe's current deadline, when one is known — but never below
// registry.MinProbeRetryAfter (or w, if shorter): a probe past its deadline
// whose cut has not landed yet still answers within moments, and a wait of
// 0 would tell the model to retry at once.
func (ep *endpoint) probeWait(clk registry.Clock, w time.Duration) time.Duration {
	due := ep.probeDue.Load()
	if due == 0 || w <= 0 || w == registry.UntilReset {
		return w
	}
	left := time.Duration(due - clk.Now().UnixNano())
	return max(min(w, left), min(w, registry.MinProbeRetryAfter))
}

// probeStarted records an admitted probe's first deadline: the earliest of
// its Timeout and its first-output deadline, here and in the breaker
// (Reservation.SetProbeDeadline), so that the breaker's own retry time
// (Status, the status page, the retry_after gauge) is the wait failover
// reports. A probe without either leaves nothing (its lease is the only
// bound).
func (cl *call) probeStarted() {
	if !cl.res.Probe() {
		return
	}
	cl.probe = true
	d := cl.stall.first
	if t := cl.ep.Timeout; t > 0 && (d == 0 || t < d) {
		d = t
	}
	if d > 0 {
		due := cl.began.Add(d)
		cl.ep.probeDue.Store(due.UnixNano())
		cl.res.SetProbeDeadline(due) // the breaker's own wait (Status, the gauge) agrees
	}
}

// probeProgressed moves the probe's deadline to its idle deadline after a
// content part (or forgets it when idle detection is off).
func (cl *call) probeProgressed() {
	if !cl.probe {
		return
	}
	if cl.stall.idle > 0 {
		due := cl.m.clock.Now().Add(cl.stall.idle)
		cl.ep.probeDue.Store(due.UnixNano())
		cl.res.SetProbeDeadline(due)
		return
	}
	cl.ep.probeDue.Store(0)
	cl.res.SetProbeDeadline(time.Time{})
}

// probeDone forgets the probe's deadline once its outcome is reported.
func (cl *call) probeDone() {
	if cl.probe {
		cl.probe = false
		cl.ep.probeDue.Store(0)
	}
}
