package incident

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// The baselines' breakers: what a Go developer writes instead of
// adkbreaker, around the tool's own call. They are baselines to compare
// with, not product code.

// clock is the time the guards read: the simulation's (sim) or, in the
// false-trip benchmark, a fake clock.
type clock interface{ Now() time.Time }

// ToolGuard is a breaker wrapped around the enrich tool's call.
type ToolGuard interface {
	// call runs f under the breaker; a refusal is an error the tool returns.
	call(ctx context.Context, f func(context.Context) (map[string]any, error)) (map[string]any, error)
	// state is the breaker's state, for the dependency's probe count.
	state() registry.State
	// trips counts the breaker's closed → open transitions.
	Trips() int
}

// Guarded returns the enrich tool's call for a variant whose guard is
// guard: the dependency's, inside the guard when there is one (nil: none).
func Guarded(s *Sim, guard func(*Sim) ToolGuard, dep *DependencySim) func(context.Context) (map[string]any, error) {
	if guard == nil {
		return dep.call
	}
	g := guard(s)
	dep.state = g.state
	return func(ctx context.Context) (map[string]any, error) { return g.call(ctx, dep.call) }
}

// gobreakerGuard is sony/gobreaker with its default settings around the
// tool, the way its README shows:
//
//	cb := gobreaker.NewCircuitBreaker[map[string]any](gobreaker.Settings{Name: "enrich"})
//	return cb.Execute(func() (map[string]any, error) { return enrich(ctx) })
//
// The tool returns Execute's error, so the model reads "circuit breaker is
// open" (or "too many requests" during a probe) as the tool's error. The
// defaults: trip on more than 5 consecutive failures (ReadyToTrip), one
// probe (MaxRequests 0 → 1), counts never cleared while closed (Interval
// 0), open for Timeout 60 s.
//
// One change, forced by virtual time: gobreaker measures Timeout with
// time.Now, which the simulation does not move (15 simulated minutes pass
// in seconds). So the guard holds the breaker open for Timeout on the
// simulation's clock, refusing with gobreaker.ErrOpenState, and gobreaker
// itself, given a 1 ns Timeout, is half-open by the time the hold ends —
// the trick the registry uses for its own holds. The trip rule, the
// probe admission, the generation check that drops late results and the
// close on a probe's success are gobreaker's.
type gobreakerGuard struct {
	hold virtualHold
	cb   *gobreaker.CircuitBreaker[map[string]any]
}

func newGobreakerGuard(clk clock, st gobreaker.Settings) *gobreakerGuard {
	g := &gobreakerGuard{}
	st.Timeout = g.hold.init(clk, st.Timeout)
	st.OnStateChange = g.hold.onStateChange
	g.cb = gobreaker.NewCircuitBreaker[map[string]any](st)
	return g
}

func (g *gobreakerGuard) call(ctx context.Context, f func(context.Context) (map[string]any, error)) (map[string]any, error) {
	if g.hold.held() {
		return nil, gobreaker.ErrOpenState
	}
	return g.cb.Execute(func() (map[string]any, error) { return f(ctx) })
}

func (g *gobreakerGuard) state() registry.State {
	if g.hold.held() {
		return registry.StateOpen
	}
	return fromGobreaker(g.cb.State())
}

func (g *gobreakerGuard) Trips() int { return g.hold.tripCount() }

func fromGobreaker(s gobreaker.State) registry.State {
	switch s {
	case gobreaker.StateOpen:
		return registry.StateOpen
	case gobreaker.StateHalfOpen:
		return registry.StateHalfOpen
	}
	return registry.StateClosed
}

// virtualHold is gobreaker's open Timeout on a clock of the sample's.
type virtualHold struct {
	clk     clock
	timeout time.Duration
	mu      sync.Mutex
	until   time.Time // guarded by mu
	Trips   int       // guarded by mu
}

// init sets the hold's clock and duration (gobreaker's default, 60 s, for
// 0) and returns the Timeout to give gobreaker.
func (h *virtualHold) init(clk clock, timeout time.Duration) time.Duration {
	h.clk, h.timeout = clk, timeout
	if h.timeout <= 0 {
		h.timeout = 60 * time.Second // gobreaker's defaultTimeout
	}
	return time.Nanosecond
}

// onStateChange is gobreaker's OnStateChange: every transition to open
// starts a hold.
func (h *virtualHold) onStateChange(_ string, from, to gobreaker.State) {
	if to != gobreaker.StateOpen {
		return
	}
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = now.Add(h.timeout)
	if from == gobreaker.StateClosed {
		h.Trips++
	}
}

func (h *virtualHold) held() bool {
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Before(h.until)
}

func (h *virtualHold) tripCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Trips
}

// nemoGuard is NVIDIA NeMo Agent Toolkit's tool circuit breaker
// (CircuitBreakerMiddleware, nat.middleware.circuit_breaker) with its
// defaults, transcribed: one breaker per function name; in closed, a
// failure counts and a success resets the count, and failure_threshold 3
// consecutive failures open it; after cooldown_period 60 s the next call
// is the one probe (half_open_success_threshold 1; calls during the probe
// are short-circuited; no probe_timeout); the probe's success closes it,
// its failure opens it for another 60 s; results of calls that end while
// it is not closed (and are not the probe) change nothing; a cancellation
// releases the probe without counting. A short-circuited call fails with
// the fixed message "Circuit breaker is OPEN for 'enrich'. Tool is
// temporarily unavailable.", which the tool returns to the model as its
// error.
type nemoGuard struct {
	clk       clock
	Name      string
	cooldown  time.Duration
	threshold int

	mu       sync.Mutex
	st       registry.State // guarded by mu
	failures int            // guarded by mu
	since    time.Time      // guarded by mu: the last state change
	probing  bool           // guarded by mu
	nTrips   int            // guarded by mu
}

// NeMo Agent Toolkit's defaults (CircuitBreakerMiddlewareConfig).
const (
	nemoFailureThreshold = 3
	nemoCooldown         = 60 * time.Second
)

func newNemoGuard(clk clock, name string) *nemoGuard {
	return &nemoGuard{clk: clk, Name: name, cooldown: nemoCooldown, threshold: nemoFailureThreshold, since: clk.Now()}
}

// errNemoOpen is NeMo's CircuitBreakerOpenError.
type errNemoOpen struct{ Name string }

func (e errNemoOpen) Error() string {
	return fmt.Sprintf("Circuit breaker is OPEN for '%s'. Tool is temporarily unavailable.", e.Name)
}

// before admits a call: probe reports whether it is the half-open probe.
func (g *nemoGuard) before() (probe bool, err error) {
	now := g.clk.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.st {
	case registry.StateOpen:
		if now.Sub(g.since) >= g.cooldown {
			g.st, g.since, g.probing = registry.StateHalfOpen, now, true
			return true, nil
		}
		return false, errNemoOpen{g.Name}
	case registry.StateHalfOpen:
		if g.probing {
			return false, errNemoOpen{g.Name}
		}
		g.probing = true
		return true, nil
	}
	return false, nil
}

// after records a call's outcome.
func (g *nemoGuard) after(probe bool, err error) {
	now := g.clk.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case errors.Is(err, context.Canceled):
		g.probing = false
	case err == nil && probe:
		g.probing = false
		g.st, g.failures, g.since = registry.StateClosed, 0, now
	case err == nil && g.st == registry.StateClosed:
		g.failures = 0
	case err != nil && probe:
		g.st, g.since, g.probing, g.failures = registry.StateOpen, now, false, g.threshold
	case err != nil && g.st == registry.StateClosed:
		g.failures++
		if g.failures >= g.threshold {
			g.st, g.since = registry.StateOpen, now
			g.nTrips++
		}
	}
}

func (g *nemoGuard) call(ctx context.Context, f func(context.Context) (map[string]any, error)) (map[string]any, error) {
	probe, err := g.before()
	if err != nil {
		return nil, err
	}
	out, err := f(ctx)
	g.after(probe, err)
	return out, err
}

func (g *nemoGuard) state() registry.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

func (g *nemoGuard) Trips() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nTrips
}

// GobreakerDefaults is gobreakerGuard with gobreaker's defaults around the
// enrich tool (every setting but the name gobreaker's default).
func GobreakerDefaults(s *Sim) ToolGuard {
	return newGobreakerGuard(s, gobreaker.Settings{Name: "enrich"})
}

// GobreakerDefaultsTail is GobreakerDefaults in the false-trip benchmark.
func GobreakerDefaultsTail(clk *registrytest.FakeClock) (TailGuard, error) {
	return newGobreakerTail(clk, gobreaker.Settings{Name: "enrich"}), nil
}

// NemoStyle is nemoGuard around the enrich tool.
func NemoStyle(s *Sim) ToolGuard { return newNemoGuard(s, "enrich") }

// NemoStyleTail is NemoStyle in the false-trip benchmark.
func NemoStyleTail(clk *registrytest.FakeClock) (TailGuard, error) {
	return nemoTail{newNemoGuard(clk, "enrich")}, nil
}
