package registry

import "time"

// DefaultPolicy returns the resolved policy of keys without one of their own.
func (r *Registry) DefaultPolicy() Policy { return r.def }

// Configured reports whether k has a policy of its own (WithPolicy), as
// opposed to the default.
func (r *Registry) Configured(k Key) bool {
	_, ok := r.policies[k]
	return ok
}

// Source returns the value of the last WithSource option (nil without
// one): what the registry's options were built from.
func (r *Registry) Source() any { return r.source }

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
