package registry

import "time"

// Clock returns the registry's time source, so that layers built on the
// registry (per-invocation accounting, caches) share one notion of time.
func (r *Registry) Clock() Clock { return r.clock }

// OutcomeReporter is implemented by errors that know how a breaker should
// count them, such as the typed errors of the MCP layer ("budget exhausted"
// is not the server's fault). Classifiers consult it first via errors.As.
type OutcomeReporter interface {
	BreakerOutcome() Outcome
}

// RetryHinter is implemented by errors that carry a server's retry hint
// (Retry-After, RetryInfo). The hint becomes a floor for the open hold.
type RetryHinter interface {
	RetryAfterHint() time.Duration
}
