// Package registry keeps one circuit breaker per dependency and is the single
// owner of breaker state: share one Registry between the plugin, failover
// models and MCP toolsets so that a dependency has one breaker wherever it is
// called from.
//
// Each breaker wraps a github.com/sony/gobreaker/v2 TwoStepCircuitBreaker
// and adds what gobreaker lacks: open holds that grow on re-trip, carry
// jitter and honour server retry hints; probe leases, so half-open cannot
// wedge; idempotent outcome reporting; operator isolate and reset; and
// ordered transition notifications delivered outside every lock.
//
// # Keys
//
// A Key names a dependency (a backend, an MCP server, a model endpoint). Keys
// come from configuration, never from strings a model controls: a breaker is
// created on first use of its key, up to a hard cap (WithMaxBreakers, default
// DefaultMaxBreakers), and is never evicted, because an evictable breaker can
// be reset by flooding the registry with new keys. Keys configured with
// WithPolicy have their slots reserved within the cap. Beyond the cap Get
// returns ErrCapacity; empty, oversized (MaxKeyLen), invalid UTF-8 or
// control-character keys return ErrInvalidKey.
//
// # Policies
//
// A Policy is plain data, fit for tables and configuration files. A zero
// Policy consists entirely of defaults, and every field documents its zero
// value: trip on 5 consecutive failures, or on a failure rate of 50% over at
// least 20 calls in a rolling 60s window; hold open for 30s, doubling on each
// re-trip up to 2m (or OpenFor, if longer), with up to 10% jitter; one
// probe with a 60s lease; a failure carrying a retry hint is one ordinary
// failure, the hint (capped at 1h) a floor for the hold until the next
// success, and 3 in a row, the last hinted, open for at least the hint. Policy.Validate reports every problem at once, and New
// reports every problem of every option at once (errors.Join).
//
// # States
//
// A breaker is closed, open or half_open:
//
//   - closed → open when failures trip the policy (CauseTrip). The hold is
//     OpenFor, times OpenBackoff for each re-trip since the last close, capped
//     at MaxOpenFor, plus jitter, and never shorter than a retry hint still in
//     the future that no success has answered since (see ObserveRetryAfter).
//   - open → half_open when the hold has expired and a call arrives
//     (CauseHoldExpired). Until a call arrives, State already reports
//     half_open with a zero RetryAfter, but no transition is published.
//   - half_open admits HalfOpenProbes probe calls per episode, each with a
//     lease of ProbeLease (shortened to its probe timeout); others are
//     refused with RefusedProbeBusy and the time the probes are expected
//     still to take: the p99 of the dependency's healthy latency less the
//     time they have run, at least MinProbeRetryAfter, at most the earliest
//     lease's remaining time (that time when the latency is not known).
//   - half_open → closed after HalfOpenProbes probes succeeded
//     (CauseProbeSucceeded); the hold growth resets.
//   - half_open → open when a probe fails (CauseProbeFailed) or a probe's
//     lease expires before its outcome arrives (CauseLeaseExpired): a lost or
//     hung probe counts as a failure, so half-open never wedges. Expiry is
//     noticed by the next Admit or state read (State, RetryAfter, Status,
//     Snapshot).
//   - any state → open by Isolate (CauseIsolated): every call is refused
//     with RefusedIsolated and outcomes are ignored until Reset.
//   - any state → closed by Reset (CauseReset), with fresh counts, no hold,
//     no hint floor and no pending probe; outcomes of calls admitted before
//     the reset are ignored.
//
// An Excluded outcome (a caller's cancellation, an invalid argument) is
// neither success nor failure: it never trips, does not break a run of
// failures, and frees a probe slot without deciding. With Policy.SlowCall, a
// success slower than SlowCall counts as a failure.
//
// # Tickets
//
// Breaker.Admit returns a Decision and, when Decision.Allowed, a Ticket that
// the caller reports with Ticket.Done (or DoneWithRetryAfter) when the call
// ends. Reporting is idempotent: only the first report of a ticket counts,
// whichever copy it is made on and however many goroutines race to make it;
// later reports return false. A probe's lease expiry competes for the same
// single report, so a probe reported after its lease returns false. A result
// that arrives after the breaker has moved on (tripped, re-closed, reset) is
// ignored. The refused path does not allocate; Decision.Err and
// Breaker.Allow give the refusal as an *OpenError matching ErrOpen (and
// ErrProbeLimit for a busy half-open).
//
// # Time
//
// Holds, leases and RetryAfter are measured with the registry's Clock
// (WithClock; by default the process's monotonic clock). RetryAfter is
// exact while open (the remaining hold) and zero when a call would be
// admitted; while half-open and busy it is an estimate bounded by the
// earliest remaining lease (see MinProbeRetryAfter). Tests use a
// registrytest.FakeClock, or run inside a testing/synctest bubble with the
// default clock, which then reads virtual time. gobreaker reads time.Now
// itself (for the rolling window, and for its own 1ns open timeout that
// precedes every half-open episode): under synctest, let virtual time move
// (a timer or sleep) between a trip and the probe, or the probe is refused.
//
// # Notifications
//
// Registry.Subscribe registers a function that receives every Transition
// that happens while it is subscribed, in order (Seq increases by one per
// transition of the registry), on a delivery goroutine that exists only
// while there is something to deliver. Delivery never blocks the breaker: a
// slow subscriber delays only later deliveries, and past the queue limit
// (WithNotifyQueue) transitions are dropped and counted
// (DroppedTransitions), which subscribers see as a gap in Seq. A subscriber
// may call back into the registry; its panic is recovered. Registry.Flush
// waits until everything enqueued before it was delivered.
//
// # Sharing with other replicas
//
// The registry knows no transport; package fleet shares trips and probes
// between replicas through three seams: it reads transitions through
// Subscribe, applies other replicas' decisions with Breaker.AdoptOpen (never
// shortening a longer local hold) and Breaker.AdoptClose, whose transitions
// carry CauseFleetOpen and CauseFleetClose so they are never echoed, and it
// installs a ProbeGate (Registry.SetProbeGate), consulted without locks when
// a call would become a half-open probe, so that one replica probes for the
// fleet. It also counts outcomes over the fleet from Breaker.Fresh (atomic
// loads, off the call path) and, when the fleet's failure rate meets the
// policy's gate first, opens a closed breaker with Breaker.TripFleet
// (CauseFleetRate: a local decision, shared like any trip). The closed path
// consults nothing.
//
// # Dashboards
//
// Besides Counts, a breaker keeps what a dashboard needs to show rates and
// causes, all read lock-free or under the breaker's own lock and none
// costing the closed path anything: Reported (outcomes since creation),
// Refusals (refusals since creation by reason, which sum to
// Counts.ShortCircuits), LastTrip (the window as it stood when it last
// tripped from closed, which the open state's fresh counts no longer show)
// and Created. Latency is measured only on request: Breaker.SampleLatency
// makes admitted calls (every one, or one in a power of two) measure their
// latency into a histogram that Latencies returns; while it is off, the
// closed path pays one atomic load. Package statuspage samples these about
// once a second.
//
// # Concurrency
//
// Registry and Breaker are safe for concurrent use. Lookups of existing
// breakers and the closed-state admission path take no registry-wide lock.
// Half-open admits exactly HalfOpenProbes probes however many goroutines
// race. Subscribers never run under a breaker lock; the Clock and the
// WithRand source may, so they must be fast and must not call the registry.
package registry
