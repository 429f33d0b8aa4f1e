package registry

import (
	"fmt"
	"math"
	"time"
)

// State is the public state of a dependency's breaker.
type State int32

const (
	// StateClosed admits every call and counts outcomes.
	StateClosed State = iota
	// StateHalfOpen admits a bounded number of probe calls; their outcome
	// decides between closed and open.
	StateHalfOpen
	// StateOpen refuses calls until the open hold expires.
	StateOpen
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half_open"
	case StateOpen:
		return "open"
	default:
		return fmt.Sprintf("state(%d)", int32(s))
	}
}

// Refusal says why a call was not admitted.
type Refusal uint8

const (
	// NotRefused is the zero value: the call was admitted.
	NotRefused Refusal = iota
	// RefusedOpen: the breaker is open and its hold has not expired.
	RefusedOpen
	// RefusedProbeBusy: the breaker is half-open and every probe slot is taken.
	RefusedProbeBusy
	// RefusedIsolated: an operator isolated the dependency.
	RefusedIsolated
	// RefusedSaturated: the dependency's bulkhead (Policy.MaxConcurrent) is
	// full. The breaker stays closed: saturation is not a failure.
	RefusedSaturated
)

// SaturatedRetryAfter is the retry_after of a bulkhead refusal: a slot
// frees when one of the calls in flight ends, which the breaker cannot
// predict; a short wait is the honest answer.
const SaturatedRetryAfter = time.Second

// String returns a stable snake_case name.
func (r Refusal) String() string {
	switch r {
	case NotRefused:
		return "admitted"
	case RefusedOpen:
		return "circuit_open"
	case RefusedProbeBusy:
		return "half_open_busy"
	case RefusedIsolated:
		return "isolated"
	case RefusedSaturated:
		return "saturated"
	default:
		return fmt.Sprintf("refusal(%d)", uint8(r))
	}
}

// Decision is the result of Breaker.Admit. It is a value so that the refused
// path does not allocate.
type Decision struct {
	// Allowed reports whether the call may proceed. When true, the Ticket
	// returned with it must be reported exactly once (extra reports are ignored).
	Allowed bool
	// State is the breaker state the decision was taken in.
	State State
	// Reason is why the call was refused; NotRefused when Allowed.
	Reason Refusal
	// RetryAfter is the time until the breaker will next admit a probe, from
	// the breaker's own record (open hold or the busy probe's lease). Zero
	// when Allowed, or when a probe may be admitted right now.
	RetryAfter time.Duration
	// At is when a refusal was decided, by the registry's clock (zero for an
	// admitted call). Callers reuse it instead of reading the clock again.
	At time.Time
	// Cause is what opened the breaker that refused the call (CauseTrip,
	// CauseProbeFailed, CauseRetryHint, CauseQuotaExhausted, CauseIsolated,
	// …); zero when Allowed. It tells a hold a server asked for from one
	// the thresholds set, from the breaker's own record: there is no second
	// copy to go stale after a Reset.
	Cause Cause
	// Shadow is true when a breaker in shadow mode (Policy.Shadow) would have
	// refused the call and admitted it instead: Allowed is true, Reason,
	// State and RetryAfter say what the refusal would have been, and the
	// Ticket (or Reservation) is invalid, so the call's outcome is not
	// counted — exactly as if it had been refused.
	Shadow bool
}

// Err returns nil for an admitted call, or an *OpenError describing the refusal.
// It allocates; callers on a hot path read the Decision fields instead.
func (d Decision) Err(key Key) error {
	if d.Allowed {
		return nil
	}
	return &OpenError{Key: key, State: d.State, Reason: d.Reason, RetryAfter: d.RetryAfter}
}

// UntilReset is the RetryAfter of an isolated dependency: it admits nothing
// until an operator resets it, so no retry time would be true. It is the
// largest Duration, so code that waits for the shortest RetryAfter, or
// treats any positive one as "not now", stays correct; payloads and messages
// (package degrade, whose UntilReset is the same value) name no time for it,
// and the retry_after gauge reports -1.
const UntilReset = time.Duration(math.MaxInt64)

// RetrySeconds is d as gauges and status documents publish a retry_after:
// seconds, or -1 for UntilReset.
func RetrySeconds(d time.Duration) float64 {
	if d == UntilReset {
		return -1
	}
	return d.Seconds()
}

// Cause says what moved a breaker. The zero Cause, CauseNone, is a
// breaker's before its first transition: it has been closed since it was
// created.
type Cause uint8

// CauseNone: no transition yet (a breaker closed since its creation).
const CauseNone Cause = 0

const (
	// CauseTrip: failures in the closed state reached the policy's threshold.
	CauseTrip Cause = iota + 1
	// CauseHoldExpired: the open hold ended and a probe is being admitted.
	CauseHoldExpired
	// CauseProbeSucceeded: enough probes succeeded to close the breaker.
	CauseProbeSucceeded
	// CauseProbeFailed: a probe failed and the breaker re-opened.
	CauseProbeFailed
	// CauseLeaseExpired: a probe's outcome never arrived within its lease; it
	// counted as a failure and the breaker re-opened.
	CauseLeaseExpired
	// CauseIsolated: an operator isolated the dependency.
	CauseIsolated
	// CauseReset: an operator reset the dependency to closed.
	CauseReset
	// CauseRetryHint: the breaker opened for a server's retry hint (a 429
	// with Retry-After or RetryInfo) before the failure threshold: as the
	// last of Policy.RetryHintFailures failures in a row, on a failed probe
	// with a hint, on the first hinted failure under TripOnRetryHint true,
	// or by Trip.
	CauseRetryHint
	// CauseQuotaExhausted: Trip opened the breaker because a quota is spent
	// (for example a per-day model quota).
	CauseQuotaExhausted
	// CauseSlowCalls: calls still outstanding past the in-flight slowness
	// threshold (Policy.SlowInFlight) reached Policy.SlowInFlightCalls.
	CauseSlowCalls
)

// String returns a stable snake_case name.
func (c Cause) String() string {
	switch c {
	case CauseNone:
		return "none"
	case CauseTrip:
		return "trip"
	case CauseHoldExpired:
		return "hold_expired"
	case CauseProbeSucceeded:
		return "probe_succeeded"
	case CauseProbeFailed:
		return "probe_failed"
	case CauseLeaseExpired:
		return "lease_expired"
	case CauseIsolated:
		return "isolated"
	case CauseReset:
		return "reset"
	case CauseRetryHint:
		return "retry_hint"
	case CauseQuotaExhausted:
		return "quota_exhausted"
	case CauseSlowCalls:
		return "slow_calls"
	default:
		if n, ok := fleetCauseName(c); ok {
			return n
		}
		return fmt.Sprintf("cause(%d)", uint8(c))
	}
}

// Transition is one state change of one dependency, delivered to subscribers
// in the order the changes happened.
type Transition struct {
	// Seq increases by one for every transition of the registry; a gap means
	// the subscriber queue overflowed and transitions were dropped.
	Seq      uint64
	Key      Key
	From, To State
	Cause    Cause
	At       time.Time
	// RetryAfter is the open hold when To is StateOpen, else zero.
	RetryAfter time.Duration
}
