package registry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// HealthCheck is a dependency's cheap liveness check (a ping, a HEAD, a
// status endpoint). When a dependency has one (WithHealthCheck), half-open
// probes are health checks: the breaker runs the check instead of admitting
// the user's call, which is refused with half_open_busy and a retry_after of
// the time the check is expected to take (see MinProbeRetryAfter), at most
// its timeout. A nil error is a success; any error, a panic or
// running past the probe timeout (see Policy.CallTimeout and SlowInFlight) is
// a failure. The context is cancelled at the probe timeout: a check must
// return when it is (the probe counts as failed at the timeout either way,
// but a check that ignores its context keeps its goroutine until it returns).
type HealthCheck func(ctx context.Context) error

// WithHealthCheck registers the health check of dependency k (see
// HealthCheck). Checks run on a goroutine of their own, one at a time per
// half-open slot.
func WithHealthCheck(k Key, check HealthCheck) Option {
	return optionFunc(func(cfg *config) {
		switch {
		case !k.Valid():
			cfg.errs = append(cfg.errs, fmt.Errorf("health check key %q: %w", k, ErrInvalidKey))
		case check == nil:
			cfg.errs = append(cfg.errs, fmt.Errorf("health check %q: must not be nil", k))
		default:
			if cfg.health == nil {
				cfg.health = map[Key]HealthCheck{}
			}
			cfg.health[k] = check
		}
	})
}

// healthProbe takes a half-open slot for the health check instead of the
// caller, starts the check and refuses the caller with the time the check
// is expected to take (at most its timeout: probeLeft).
func (b *Breaker) healthProbe(now time.Time) (Ticket, Decision) {
	t, d := b.probe(now)
	if !d.Allowed || d.Shadow || !t.Valid() || d.State != StateHalfOpen {
		return t, d // refused (in shadow mode too), or closed meanwhile: an ordinary call
	}
	timeout := t.r.lease.Sub(now)
	b.hcRuns.Add(1)
	go b.runHealthCheck(t, timeout)
	b.mu.Lock()
	cause := b.openCause
	b.mu.Unlock()
	// The check's expected time, as for any probe (probewait.go); its
	// timeout when the dependency's latency is not known.
	return b.refuse(now, StateHalfOpen, RefusedProbeBusy, probeLeft(t.r, now, b.expectedLatency()), cause)
}

var errHealthCheckPanic = errors.New("registry: health check panicked")

func (b *Breaker) runHealthCheck(t Ticket, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := func() (err error) {
		defer func() {
			if recover() != nil {
				err = errHealthCheckPanic
			}
		}()
		return b.hc(ctx)
	}()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // answered after its deadline: too slow to count
	}
	o := Success
	if err != nil {
		o = Failure
		b.hcFails.Add(1)
	}
	t.Done(o)
}
