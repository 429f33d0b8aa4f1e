package registry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy configures one dependency's breaker. It is plain data: keep it in
// tables or configuration files. A zero Policy consists entirely of defaults,
// and every field documents its zero value.
type Policy struct {
	// ConsecutiveFailures opens the breaker after this many failures in a row.
	// If 0, 5.
	ConsecutiveFailures int `json:"consecutive_failures,omitempty" yaml:"consecutive_failures,omitempty"`

	// FailureRate opens the breaker when the share of failures among counted
	// calls in the rolling Window reaches it, once at least MinCalls calls
	// were counted. If 0, 0.5. Must be in (0, 1].
	FailureRate float64 `json:"failure_rate,omitempty" yaml:"failure_rate,omitempty"`
	// MinCalls is the volume the failure rate needs before it can trip. If 0, 20.
	MinCalls int `json:"min_calls,omitempty" yaml:"min_calls,omitempty"`
	// Window is the rolling window over which the rate is computed, in ten
	// buckets. If 0, 60s; at least 10ms and at most 24h. Outcomes of calls
	// that started more than one Window ago are not counted, so Window should
	// be at least twice the longest call deadline of the dependency.
	Window time.Duration `json:"window,omitempty" yaml:"window,omitempty"`
	// Shadow runs the breaker in shadow mode: it keeps its state machine as
	// if it enforced (trips, holds, probes), but every call it would have
	// refused is admitted instead and counted as a shadow refusal
	// (Counts.ShadowRefusals, Decision.Shadow). Roll adkbreaker out with it
	// to watch what it would do before it does it.
	Shadow bool `json:"shadow,omitempty" yaml:"shadow,omitempty"`
	// DisableFailureRate turns the failure-rate trip off; only consecutive
	// failures trip.
	DisableFailureRate bool `json:"disable_failure_rate,omitempty" yaml:"disable_failure_rate,omitempty"`

	// SlowCall, if positive, counts a call that succeeded but took longer than
	// SlowCall as a failure. If 0, latency is not judged (and the admitted path
	// does not read the clock).
	SlowCall time.Duration `json:"slow_call,omitempty" yaml:"slow_call,omitempty"`

	// OpenFor is how long the breaker stays open after its first trip before a
	// probe is admitted. If 0, 30s.
	OpenFor time.Duration `json:"open_for,omitempty" yaml:"open_for,omitempty"`
	// OpenBackoff multiplies the hold on every re-trip from half-open (a failed
	// probe), up to MaxOpenFor; a successful close resets it. If 0, 2. 1 keeps
	// the hold constant.
	OpenBackoff float64 `json:"open_backoff,omitempty" yaml:"open_backoff,omitempty"`
	// MaxOpenFor caps the grown hold. If 0, 2m (or OpenFor, if larger): with
	// the other defaults the holds are 30s, 60s, 120s, 120s, … Must not be
	// below OpenFor, or below its 30s default when OpenFor is 0. The default
	// was 1m before (set 1m to keep it): docs/incident.md measures what the
	// longer cap saves in probes and costs in recovery.
	MaxOpenFor time.Duration `json:"max_open_for,omitempty" yaml:"max_open_for,omitempty"`
	// OpenJitter adds a uniformly random extra of up to this fraction of the
	// hold, so replicas that opened together do not probe together. Below
	// MaxOpenFor the hold is never shortened; at the cap the jitter is taken
	// off the cap instead, so a hold never exceeds MaxOpenFor (a retry hint
	// still can). If 0, 0.1. See NoJitter.
	OpenJitter float64 `json:"open_jitter,omitempty" yaml:"open_jitter,omitempty"`
	// NoJitter disables OpenJitter (deterministic holds).
	NoJitter bool `json:"no_jitter,omitempty" yaml:"no_jitter,omitempty"`

	// HalfOpenProbes is how many probe calls half-open admits at once, and how
	// many must succeed in a row to close. If 0, 1.
	HalfOpenProbes int `json:"half_open_probes,omitempty" yaml:"half_open_probes,omitempty"`
	// ProbeLease bounds how long a probe's outcome may take. A probe whose
	// outcome has not arrived when the lease expires is counted as a failure,
	// so half-open can never wedge. If 0, 60s. Set it above the dependency's
	// longest call deadline; it must not be below SlowCall.
	ProbeLease time.Duration `json:"probe_lease,omitempty" yaml:"probe_lease,omitempty"`

	// MaxRetryHint caps a server's retry hint (Retry-After, RetryInfo) used as
	// a floor for the open hold, so a hostile or broken hint cannot hold the
	// dependency forever (and a success drops the floor: see
	// Breaker.ObserveRetryAfter). If 0, 1h.
	MaxRetryHint time.Duration `json:"max_retry_hint,omitempty" yaml:"max_retry_hint,omitempty"`

	// TripOnRetryHint says what a failure carrying a server retry hint
	// (HTTP 429 or 503 with Retry-After, a Gemini RetryInfo, an MCP
	// server's declined SSE retry:) does. If nil or false (the default, for
	// every kind of dependency), the failure counts as one ordinary failure
	// and the hint is a floor for the hold once the breaker opens: by its
	// thresholds, or after RetryHintFailures failures in a row the last of
	// which carried a hint (cause retry_hint). A success reported after it
	// drops the floor (the server answered again: see
	// Breaker.ObserveRetryAfter). One 429 among successes so
	// never opens the breaker, while a backend answering 429 to every call
	// is open by the RetryHintFailures-th call and not called again before
	// the hint has passed: tripping on one or two samples refuses a healthy
	// dependency to every user for the whole hint. If true (an explicit
	// opt-in), every failure with a hint opens the breaker at once, for the
	// hint (capped at MaxRetryHint), cause retry_hint.
	TripOnRetryHint *bool `json:"trip_on_retry_hint,omitempty" yaml:"trip_on_retry_hint,omitempty"`
	// RetryHintFailures applies when TripOnRetryHint is not true: this many
	// consecutive failures, the last of which carries a retry hint, open the
	// breaker (cause retry_hint) for at least the hint. Sustained
	// exhaustion — every call answered 429 — so opens on the
	// RetryHintFailures-th call, while one 429 among successes never does.
	// If 0, 3. At most 1000.
	RetryHintFailures int `json:"retry_hint_failures,omitempty" yaml:"retry_hint_failures,omitempty"`
	// NoTripOnRetryHint is the older spelling of TripOnRetryHint false (now
	// the default); it must not be combined with TripOnRetryHint true.
	NoTripOnRetryHint bool `json:"no_trip_on_retry_hint,omitempty" yaml:"no_trip_on_retry_hint,omitempty"`

	// CallTimeout is the dependency's per-call deadline. A guarded function
	// tool (callbacks.GuardedTool) runs with a context carrying it, and a
	// call that ends after it counts as a failure of the dependency (the
	// caller's own cancellation stays excluded); model endpoints and MCP
	// servers have their own timeouts (failover.Endpoint.Timeout, mcpguard
	// policies). The breaker also uses it to bound a half-open probe (a probe
	// that has not answered by then has failed, and retry_after while a probe
	// is out never exceeds it). If 0, none. Window and ProbeLease must exceed
	// it.
	CallTimeout time.Duration `json:"call_timeout,omitempty" yaml:"call_timeout,omitempty"`

	// DisableConsecutiveFailures turns the consecutive-failure trip off; only
	// the failure rate (and in-flight slowness) trip. It cannot be combined
	// with DisableFailureRate.
	DisableConsecutiveFailures bool `json:"disable_consecutive_failures,omitempty" yaml:"disable_consecutive_failures,omitempty"`
	// CountWindow, if positive, computes the failure rate over the outcomes of
	// the last CountWindow calls instead of the time Window. The rate trips
	// once at least MinCalls outcomes are held (MinCalls defaults to
	// min(20, CountWindow) then). At most 10000.
	CountWindow int `json:"count_window,omitempty" yaml:"count_window,omitempty"`

	// SlowInFlight is the in-flight slowness threshold: a call still
	// outstanding this long after it was admitted is judged slow before it
	// returns, and SlowInFlightCalls such calls open the breaker (cause
	// slow_calls). Their outcomes, when they finally arrive, are excluded:
	// they were counted once, when judged. If 0, the threshold is derived:
	// twice the observed p99 of healthy calls (so a long healthy tail is not
	// judged slow), at least MinSlowInFlight and, while the tail is being
	// learned (the first 64 measured calls), SlowInFlightFactor × their
	// observed latency; at most the CallTimeout (or MaxDerivedSlowInFlight
	// without one), armed after a few calls were measured. Either way, slow
	// calls open the breaker only while they are at least half of the calls
	// that started with them: a hang, not a few unlucky calls; with a
	// derived threshold, also once the oldest outstanding call is past it
	// and none of the calls after it that are past the healthy p99 has
	// returned (a stall). The threshold also bounds a half-open probe.
	SlowInFlight time.Duration `json:"slow_in_flight,omitempty" yaml:"slow_in_flight,omitempty"`
	// SlowInFlightFactor multiplies the observed healthy latency into the
	// derived threshold (when SlowInFlight is 0) while the latency tail is
	// being learned; once it is known, the threshold follows the tail. If
	// 0, 10. At least 1.
	SlowInFlightFactor float64 `json:"slow_in_flight_factor,omitempty" yaml:"slow_in_flight_factor,omitempty"`
	// SlowInFlightCalls is how many outstanding slow calls open the breaker.
	// If 0, 3.
	SlowInFlightCalls int `json:"slow_in_flight_calls,omitempty" yaml:"slow_in_flight_calls,omitempty"`
	// DisableSlowInFlight turns in-flight slowness off; it wins over
	// SlowInFlight and SlowInFlightFactor (which a dependency may inherit).
	DisableSlowInFlight bool `json:"disable_slow_in_flight,omitempty" yaml:"disable_slow_in_flight,omitempty"`

	// MaxConcurrent is the dependency's bulkhead: at most this many calls in
	// flight at once (half-open probes are exempt). A call over the cap is
	// refused with reason saturated and never counts as a failure. If 0, no
	// cap.
	MaxConcurrent int `json:"max_concurrent,omitempty" yaml:"max_concurrent,omitempty"`
	// QueueWait is how long a call over the bulkhead's cap may wait for a
	// slot before it is refused. If 0, it is refused at once. At most 1m;
	// requires MaxConcurrent. The wait blocks the admitting goroutine (ADK's
	// BeforeTool) and does not observe the call's context: keep it short.
	QueueWait time.Duration `json:"queue_wait,omitempty" yaml:"queue_wait,omitempty"`
}

// Default values of a zero Policy.
const (
	DefaultConsecutiveFailures = 5
	DefaultFailureRate         = 0.5
	DefaultMinCalls            = 20
	DefaultWindow              = 60 * time.Second
	DefaultOpenFor             = 30 * time.Second
	DefaultOpenBackoff         = 2.0
	DefaultMaxOpenFor          = 2 * time.Minute
	DefaultOpenJitter          = 0.1
	DefaultHalfOpenProbes      = 1
	DefaultProbeLease          = 60 * time.Second
	DefaultMaxRetryHint        = time.Hour
	DefaultRetryHintFailures   = 3
	DefaultSlowInFlightFactor  = 10.0
	DefaultSlowInFlightCalls   = 3
)

// MinSlowInFlight is the lowest derived in-flight slowness threshold: a
// dependency answering in 5ms is not judged slow at 50ms.
const MinSlowInFlight = 500 * time.Millisecond

// MaxDerivedSlowInFlight caps the derived in-flight slowness threshold of a
// dependency without a CallTimeout (with one, the cap is the CallTimeout, at
// least MinSlowInFlight): a tail of slow successes cannot teach the detector
// to wait minutes before it calls a hang a hang.
const MaxDerivedSlowInFlight = time.Minute

// Bounds of the containment knobs.
const (
	maxCountWindow   = 10000
	maxConcurrentCap = 1 << 20
	maxQueueWait     = time.Minute
)

// windowBuckets is how many buckets the rolling window is split into.
const windowBuckets = 10

// maxWindow is the longest rolling window accepted. Far larger windows
// overflow gobreaker's bucket arithmetic (it panics), and gobreaker's uint32
// counters wrap after 2³² calls in one window.
const maxWindow = 24 * time.Hour

// WithDefaults returns p with every zero field replaced by its default.
func (p Policy) WithDefaults() Policy {
	if p.ConsecutiveFailures == 0 {
		p.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if p.FailureRate == 0 {
		p.FailureRate = DefaultFailureRate
	}
	if p.MinCalls == 0 {
		p.MinCalls = DefaultMinCalls
		if p.CountWindow > 0 {
			p.MinCalls = min(DefaultMinCalls, p.CountWindow)
		}
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.OpenFor == 0 {
		p.OpenFor = DefaultOpenFor
	}
	if p.OpenBackoff == 0 {
		p.OpenBackoff = DefaultOpenBackoff
	}
	if p.MaxOpenFor == 0 {
		p.MaxOpenFor = max(DefaultMaxOpenFor, p.OpenFor)
	}
	if p.OpenJitter == 0 && !p.NoJitter {
		p.OpenJitter = DefaultOpenJitter
	}
	if p.NoJitter {
		p.OpenJitter = 0
	}
	if p.HalfOpenProbes == 0 {
		p.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if p.ProbeLease == 0 {
		p.ProbeLease = DefaultProbeLease
	}
	if p.MaxRetryHint == 0 {
		p.MaxRetryHint = DefaultMaxRetryHint
	}
	if p.RetryHintFailures == 0 {
		p.RetryHintFailures = DefaultRetryHintFailures
	}
	if p.DisableSlowInFlight {
		p.SlowInFlight, p.SlowInFlightFactor = 0, 0
	} else if p.SlowInFlightFactor == 0 {
		p.SlowInFlightFactor = DefaultSlowInFlightFactor
	}
	if p.SlowInFlightCalls == 0 {
		p.SlowInFlightCalls = DefaultSlowInFlightCalls
	}
	return p
}

// Validate reports every problem with p at once (joined with errors.Join), or
// nil. Zero fields are valid: they mean "default".
func (p Policy) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if p.ConsecutiveFailures < 0 {
		bad("consecutive_failures", "must be ≥ 0, got %d", p.ConsecutiveFailures)
	}
	if p.FailureRate < 0 || p.FailureRate > 1 || p.FailureRate != p.FailureRate {
		bad("failure_rate", "must be in (0, 1], got %v", p.FailureRate)
	}
	if p.MinCalls < 0 {
		bad("min_calls", "must be ≥ 0, got %d", p.MinCalls)
	}
	if p.Window < 0 {
		bad("window", "must be ≥ 0, got %s", p.Window)
	} else if p.Window > 0 && p.Window < windowBuckets*time.Millisecond {
		bad("window", "must be at least %s, got %s", windowBuckets*time.Millisecond, p.Window)
	} else if p.Window > maxWindow {
		bad("window", "must be at most %s, got %s", maxWindow, p.Window)
	}
	if p.SlowCall < 0 {
		bad("slow_call", "must be ≥ 0, got %s", p.SlowCall)
	}
	if p.OpenFor < 0 {
		bad("open_for", "must be ≥ 0, got %s", p.OpenFor)
	}
	if p.OpenBackoff != 0 && (p.OpenBackoff < 1 || p.OpenBackoff > 100 || p.OpenBackoff != p.OpenBackoff) {
		bad("open_backoff", "must be in [1, 100], got %v", p.OpenBackoff)
	}
	if p.MaxOpenFor < 0 {
		bad("max_open_for", "must be ≥ 0, got %s", p.MaxOpenFor)
	}
	// Cross-field checks compare resolved values: a zero field means its
	// default, which must satisfy them too.
	r := p.WithDefaults()
	if p.MaxOpenFor > 0 && p.OpenFor >= 0 && r.OpenFor > p.MaxOpenFor {
		bad("max_open_for", "must be ≥ open_for (%s), got %s", r.OpenFor, p.MaxOpenFor)
	}
	if p.OpenJitter < 0 || p.OpenJitter > 1 || p.OpenJitter != p.OpenJitter {
		bad("open_jitter", "must be in [0, 1], got %v", p.OpenJitter)
	}
	if p.HalfOpenProbes < 0 || p.HalfOpenProbes > 1000 {
		bad("half_open_probes", "must be in [0, 1000], got %d", p.HalfOpenProbes)
	}
	if p.ProbeLease < 0 {
		bad("probe_lease", "must be ≥ 0, got %s", p.ProbeLease)
	}
	if p.MaxRetryHint < 0 {
		bad("max_retry_hint", "must be ≥ 0, got %s", p.MaxRetryHint)
	}
	if p.NoTripOnRetryHint && p.TripOnRetryHint != nil && *p.TripOnRetryHint {
		bad("no_trip_on_retry_hint", "contradicts trip_on_retry_hint: true (no_trip_on_retry_hint is its older spelling of false; keep one)")
	}
	if p.RetryHintFailures < 0 || p.RetryHintFailures > 1000 {
		bad("retry_hint_failures", "must be in [0, 1000], got %d", p.RetryHintFailures)
	}
	if p.SlowCall > 0 && p.ProbeLease >= 0 && r.ProbeLease < p.SlowCall {
		bad("probe_lease", "must be ≥ slow_call (%s), got %s", p.SlowCall, r.ProbeLease)
	}
	if p.Window >= 0 && p.SlowCall >= 0 && p.CallTimeout >= 0 {
		errs = append(errs, layerErrs(r)...) // layers.go: the layered-timeout rule
	}
	errs = append(errs, p.validateContain()...)
	return errors.Join(errs...)
}

// validateContain checks the containment knobs (call timeout, count window,
// gates, in-flight slowness, bulkhead).
func (p Policy) validateContain() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if p.CallTimeout < 0 {
		bad("call_timeout", "must be ≥ 0, got %s", p.CallTimeout)
	}
	if p.DisableConsecutiveFailures && p.DisableFailureRate {
		bad("disable_consecutive_failures", "cannot be combined with disable_failure_rate: no failure would ever open the breaker")
	}
	if p.CountWindow < 0 || p.CountWindow > maxCountWindow {
		bad("count_window", "must be in [0, %d], got %d", maxCountWindow, p.CountWindow)
	} else if p.CountWindow > 0 && p.MinCalls > p.CountWindow {
		bad("min_calls", "must be ≤ count_window (%d), got %d", p.CountWindow, p.MinCalls)
	}
	if p.SlowInFlight < 0 {
		bad("slow_in_flight", "must be ≥ 0, got %s", p.SlowInFlight)
	} else if p.SlowInFlight > 0 && p.CallTimeout > 0 && p.SlowInFlight >= p.CallTimeout {
		bad("slow_in_flight", "must be below call_timeout (%s), got %s: calls end at their timeout first", p.CallTimeout, p.SlowInFlight)
	}
	if p.SlowInFlightFactor != 0 && (p.SlowInFlightFactor < 1 || p.SlowInFlightFactor > 1000 || p.SlowInFlightFactor != p.SlowInFlightFactor) {
		bad("slow_in_flight_factor", "must be in [1, 1000], got %v", p.SlowInFlightFactor)
	}
	if p.SlowInFlightCalls < 0 || p.SlowInFlightCalls > maxConcurrentCap {
		bad("slow_in_flight_calls", "must be in [0, %d], got %d", maxConcurrentCap, p.SlowInFlightCalls)
	}
	if p.MaxConcurrent < 0 || p.MaxConcurrent > maxConcurrentCap {
		bad("max_concurrent", "must be in [0, %d], got %d", maxConcurrentCap, p.MaxConcurrent)
	}
	if p.QueueWait < 0 || p.QueueWait > maxQueueWait {
		bad("queue_wait", "must be in [0, %s], got %s", maxQueueWait, p.QueueWait)
	} else if p.QueueWait > 0 && p.MaxConcurrent == 0 {
		bad("queue_wait", "requires max_concurrent")
	}
	return errs
}

// tripsOnHint reports whether a failure with a retry hint opens the breaker
// at once: only when TripOnRetryHint is true (Validate refuses it together
// with NoTripOnRetryHint, the older spelling of false).
func (p *Policy) tripsOnHint() bool {
	return p.TripOnRetryHint != nil && *p.TripOnRetryHint
}

// TripsOnRetryHint reports whether a failure carrying a server retry hint
// opens the breaker at once under p: only with TripOnRetryHint true; the
// default (nil) is false, for every kind of dependency.
func (p Policy) TripsOnRetryHint() bool { return p.tripsOnHint() }

// CheckCallTimeout reports every layered-timeout rule that a client's own
// per-call timeout d (a model endpoint's Timeout, an MCP server's call
// timeout) breaks under p, by the rule Validate applies to CallTimeout:
// the rolling window and the probe lease must exceed it. Each error starts
// with field, the caller's name for d. Nil when d ≤ 0.
func (p Policy) CheckCallTimeout(field string, d time.Duration) []error {
	if d <= 0 {
		return nil
	}
	r := p.WithDefaults()
	var errs []error
	for _, l := range layers {
		if l.inner != "call_timeout" {
			continue
		}
		r.CallTimeout = d
		outer, _ := l.get(r)
		if outer > 0 && outer <= d {
			errs = append(errs, fmt.Errorf("%s: %s must be below the breaker's %s (%s): %s", field, d, l.outer, outer, l.why))
		}
	}
	return errs
}

// readyToTrip reports whether counts in the closed state should open.
func (p *Policy) readyToTrip(consecutive, successes, failures uint32) bool {
	if !p.DisableConsecutiveFailures && int(consecutive) >= p.ConsecutiveFailures {
		return true
	}
	if p.DisableFailureRate {
		return false
	}
	n := successes + failures
	return int(n) >= p.MinCalls && n > 0 && float64(failures) >= p.FailureRate*float64(n)
}

// hold returns the open hold after reopens consecutive re-trips, before
// jitter, capped at MaxOpenFor.
func (p *Policy) hold(reopens int) time.Duration {
	d := float64(p.OpenFor)
	for i := 0; i < reopens && d < float64(p.MaxOpenFor); i++ {
		d *= p.OpenBackoff
	}
	if d >= float64(p.MaxOpenFor) {
		// Not time.Duration(float64(MaxOpenFor)): near MaxInt64 the float
		// rounds up to 2⁶³, which converts to a negative Duration.
		return p.MaxOpenFor
	}
	// float64 rounds durations above 2⁵³ns (104 days): never below OpenFor.
	return max(time.Duration(d), p.OpenFor)
}

// jitter returns hold lengthened by u·OpenJitter of itself, but never past
// MaxOpenFor: a hold that would cross the cap is shortened from the cap by
// the same random amount instead, so replicas at the cap still spread out
// and the cap stays a promise ("a probe at least every MaxOpenFor"). u is
// clamped to [0, 1], so a misbehaving random source can neither shorten an
// uncapped hold nor stretch any hold past hold·(1+OpenJitter) or the cap;
// the arithmetic saturates instead of overflowing.
func (p *Policy) jitter(hold time.Duration, u float64) time.Duration {
	if !(u > 0) || p.OpenJitter <= 0 { // also NaN
		return hold
	}
	extra := min(u, 1) * p.OpenJitter * float64(hold)
	total := float64(hold) + extra
	if p.MaxOpenFor > 0 && total > float64(p.MaxOpenFor) {
		// Below the cap by the random amount (bounded by the jitter range of
		// the cap itself), and never below OpenFor.
		down := min(extra, p.OpenJitter*float64(p.MaxOpenFor))
		return max(p.MaxOpenFor-time.Duration(down), min(p.OpenFor, p.MaxOpenFor))
	}
	if total >= float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return max(time.Duration(total), hold)
}
