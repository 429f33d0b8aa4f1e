package failover

import (
	"time"

	"github.com/adkbreaker/adkbreaker/internal/shed"
	"github.com/adkbreaker/adkbreaker/registry"
)

// DefaultPolicy returns the conservative breaker policy for model endpoints.
//
// A tool's breaker that trips too easily costs one tool; a model endpoint's
// breaker that trips too easily silently demotes every user to the fallback
// model (usually a smaller one) for the whole hold, on every replica that
// saw the same blip. Per-call failover already rescues the individual call
// that fails, so the breaker's only job is to stop paying for an endpoint
// that is persistently down. Hence, compared with registry defaults:
//
//   - ConsecutiveFailures 10 (not 5): Gemini's 503 "model overloaded" comes
//     in short bursts that per-call failover absorbs.
//   - FailureRate 0.5 over MinCalls 50 (not 20) in a Window of 5m (not 60s):
//     the rate needs real volume, and the window must be at least twice the
//     longest call (a long generation or stream) or failures of long calls
//     are thrown away.
//   - OpenFor 30s, doubling on failed probes up to MaxOpenFor 5m: users
//     return to the primary within seconds of its recovery.
//   - ProbeLease 5m: a probe is a real model call, possibly a long stream;
//     the lease must outlive it (failover reports every outcome by defer,
//     so the lease is only a backstop).
//   - TripOnRetryHint false (the registry's default too; set explicitly),
//     RetryHintFailures 5 (not 3): one 429 (or 503) with a retry hint does
//     not open the breaker for every user; per-call failover serves that
//     call from the next endpoint, and the hint is a floor for the hold if
//     the breaker opens later. A 429 is a refusal,
//     not a failure of the thresholds above (a storm refusing half the
//     calls would trip them): five refusals in a row open the breaker for
//     the hint (at least OpenFor), so an endpoint answering 429 to every
//     call is open on its fifth call and is not called again until the
//     hint has passed; more are needed while the endpoint has been
//     refusing a share of its calls (13 under a third, 20 under half: see
//     ExhaustionFalseOpen), so a partial storm does not open it. Three in a
//     row start a storm refusing half the calls once in 8, five once in
//     32. A hinted 503 counts as a failure, and RetryHintFailures of them
//     in a row, the last hinted, open it. (A tool or an MCP server under
//     the registry's default is open on its third hinted failure in a
//     row.) An exhausted daily quota still opens at once, until the quota
//     resets.
//   - MaxRetryHint 1h: caps a server's retry hint and the daily-quota hold.
//     Raise it to 24h to hold an endpoint whose daily quota is exhausted
//     until the quota resets rather than probing it hourly.
//   - SlowCall off: model latency varies too much with output length.
//   - DisableSlowInFlight: likewise, a long generation is not a hang; model
//     calls are bounded by the endpoint's Timeout instead.
//
// Register it for each endpoint key: registry.WithPolicy(key, DefaultPolicy()),
// or PolicyOptions. Zero fields of a Policy mean the registry's defaults, so
// DefaultPolicy sets every field it relies on.
func DefaultPolicy() registry.Policy {
	noTrip := false
	return registry.Policy{
		ConsecutiveFailures: 10,
		FailureRate:         0.5,
		MinCalls:            50,
		Window:              5 * time.Minute,
		OpenFor:             30 * time.Second,
		OpenBackoff:         2,
		MaxOpenFor:          5 * time.Minute,
		HalfOpenProbes:      1,
		ProbeLease:          5 * time.Minute,
		MaxRetryHint:        time.Hour,
		TripOnRetryHint:     &noTrip,
		RetryHintFailures:   5,
		DisableSlowInFlight: true,
	}
}

// PolicyOptions returns registry options giving each key DefaultPolicy, for
// registry.New:
//
//	reg, err := registry.New(failover.PolicyOptions(primaryKey, fallbackKey)...)
func PolicyOptions(keys ...registry.Key) []registry.Option {
	out := make([]registry.Option, 0, len(keys))
	for _, k := range keys {
		out = append(out, registry.WithPolicy(k, DefaultPolicy()))
	}
	return out
}

// ExhaustionFalseOpen is the chance, per call, that a partial rate-limit
// storm opens a model endpoint's breaker by accident: an endpoint that
// refuses (429) a share r of its calls, independently, is opened only by a
// streak of refusals that share would produce with a probability of at most
// this, i.e. at least ln(ExhaustionFalseOpen)/ln(r) refusals in a row, and
// never fewer than the policy's RetryHintFailures.
const ExhaustionFalseOpen = shed.FalseOpen
