package registry

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrOpen matches every refusal (open, probe-busy, isolated, saturated) through errors.Is.
	ErrOpen = errors.New("registry: dependency unavailable")
	// ErrProbeLimit matches a refusal because every half-open probe slot is taken.
	ErrProbeLimit = errors.New("registry: half-open probe limit reached")
	// ErrCapacity is returned by Registry.Get when the registry already holds
	// its maximum number of breakers.
	ErrCapacity = errors.New("registry: breaker capacity reached")
	// ErrSaturated matches a refusal because the dependency's bulkhead is full.
	ErrSaturated = errors.New("registry: dependency bulkhead full")
	// ErrInvalidKey is returned for an empty or oversized key.
	ErrInvalidKey = errors.New("registry: invalid dependency key")
)

// OpenError describes a refused call. errors.Is(err, ErrOpen) is true for
// every OpenError; errors.Is(err, ErrProbeLimit) only for half-open refusals,
// errors.Is(err, ErrSaturated) only for bulkhead refusals.
type OpenError struct {
	Key        Key
	State      State
	Reason     Refusal
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("registry: %s unavailable (%s, state %s); retry after %s",
		e.Key, e.Reason, e.State, e.RetryAfter.Round(time.Millisecond))
}

// Is reports whether target is ErrOpen, or ErrProbeLimit for a probe-busy refusal.
func (e *OpenError) Is(target error) bool {
	return target == ErrOpen || (target == ErrProbeLimit && e.Reason == RefusedProbeBusy) ||
		(target == ErrSaturated && e.Reason == RefusedSaturated)
}
