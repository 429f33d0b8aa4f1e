package observe

import (
	"context"
	"errors"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Observer receives the handler's events, for telemetry. Methods are called
// on the caller's goroutine and must be fast and non-blocking. Breaker state
// transitions are not here: subscribe to the registry.
type Observer interface {
	ShortCircuit(ctx context.Context, ev ShortCircuitEvent)
	TurnEnded(ctx context.Context, ev TurnEndEvent)
}

// ShortCircuitEvent describes one refused tool call.
type ShortCircuitEvent struct {
	Dependency   registry.Key
	Tool         string
	Reason       degrade.Reason
	State        registry.State
	RetryAfter   time.Duration
	ThisTurn     int  // short-circuits of this dependency in this invocation
	TurnTotal    int  // across all dependencies
	Terminal     bool // the payload told the model to stop calling it
	InvocationID string
	// Shadow is true for a breaker in shadow mode (registry.Policy.Shadow):
	// the call was NOT refused, this is what would have been. ThisTurn and
	// TurnTotal are 0 (nothing was counted toward the turn's limits) and no
	// payload was returned.
	Shadow bool
}

// MismatchObserver is implemented by Observers that also want outcome
// mismatches: a failed tool call that the handler's AfterTool was shown as a
// success, because a plugin registered ahead of adkbreaker (ADK's
// retryandreflect) rewrote the error. The handler checks for it with a type
// assertion, so existing Observers need not change.
type MismatchObserver interface {
	OutcomeMismatch(ctx context.Context, ev MismatchEvent)
}

// MismatchEvent describes one outcome mismatch.
type MismatchEvent struct {
	Dependency   registry.Key
	Tool         string
	InvocationID string
}

// ShadowObserver is implemented by Observers that also want what a breaker
// in shadow mode (registry.Policy.Shadow) would have changed in a model
// request, had it enforced: each request's declaration of a tool whose
// breaker would refuse it, which an enforcing breaker marks unavailable (or
// removes, with callbacks.Config.RemoveUnavailable). Shadow mode changes nothing the
// model reads, so this event is the only trace of it. Like MismatchObserver
// it is found by a type assertion.
type ShadowObserver interface {
	ShadowAnnotation(ctx context.Context, ev ShadowAnnotationEvent)
}

// ShadowAnnotationEvent describes one tool declaration of one model request
// that was left as it was because its breaker is in shadow mode.
type ShadowAnnotationEvent struct {
	Dependency registry.Key
	Tool       string
	// Removed is true when an enforcing breaker would have removed the
	// declaration (callbacks.Config.RemoveUnavailable), false when it would have
	// marked it unavailable.
	Removed      bool
	RetryAfter   time.Duration
	InvocationID string
}

// CallObserver is implemented by Observers that also want the duration and
// outcome of every guarded tool call that really ran (the dashboards' call
// latency). Like MismatchObserver it is found by a type assertion, so
// existing Observers need not change; the handler reads the clock for it
// only on guarded calls, which read it anyway.
type CallObserver interface {
	CallEnded(ctx context.Context, ev CallEvent)
}

// CallEvent describes one guarded call that reached its tool.
type CallEvent struct {
	Dependency registry.Key
	Tool       string
	// Outcome is what the breaker was told (a timeout of ours is a failure,
	// the caller's cancellation excluded).
	Outcome registry.Outcome
	// Duration is from the tool's start to its return, by the registry's
	// clock.
	Duration time.Duration
}

// TurnEndReason says why the plugin ended a turn.
type TurnEndReason string

const (
	// TurnEndShortCircuitBudget: H short-circuits in the invocation (TurnLimit).
	TurnEndShortCircuitBudget TurnEndReason = "short_circuit_budget"
	// TurnEndModelUnavailable: every endpoint of the model is unavailable.
	TurnEndModelUnavailable TurnEndReason = "model_unavailable"
	// TurnEndModelCallBudget: the invocation made MaxModelCalls model calls.
	TurnEndModelCallBudget TurnEndReason = "model_call_budget"
	// TurnEndTimeBudget: the invocation has run for MaxTurnDuration.
	TurnEndTimeBudget TurnEndReason = "time_budget"
)

// TurnEndEvent describes a turn ended by BeforeModel.
type TurnEndEvent struct {
	InvocationID string
	Reason       TurnEndReason
	TurnTotal    int // short-circuits in the invocation
	// ModelCalls is the number of model calls counted in the invocation,
	// including the one answered by the plugin; 0 when no turn budget is set
	// (they are then not counted).
	ModelCalls int
}

// TurnEndRepeatedCall: the model kept calling one tool with the same
// arguments (callbacks.Config.RepeatLimit).
const TurnEndRepeatedCall TurnEndReason = "repeated_call"

// RepeatObserver is implemented by Observers that also want the
// repeated-call guard's decisions. Like MismatchObserver it is found by a
// type assertion.
type RepeatObserver interface {
	RepeatedCall(ctx context.Context, ev RepeatEvent)
}

// RepeatEvent describes a call the repeated-call guard answered.
type RepeatEvent struct {
	Dependency registry.Key // "" for a tool with no breaker
	Tool       string
	// Calls is how many calls of the tool with these arguments the
	// invocation made, this one included (≥ Limit).
	Calls int
	Limit int
	// EndsTurn is set on the call after the one noted: the turn ends.
	EndsTurn     bool
	InvocationID string
	// Shadow: the tool's dependency is in shadow mode (registry.Policy.Shadow),
	// so nothing was done: the call ran, the model read no note, the turn
	// goes on. The event says what the guard would have done.
	Shadow bool
}

// TurnEndTokenBudget: the root turn's model responses reported
// MaxTurnTokens tokens or more (callbacks.Config.MaxTurnTokens), sub-agents
// reached through agent tools included.
const TurnEndTokenBudget TurnEndReason = "token_budget"

// CostObserver is implemented by Observers that also want what each root
// turn cost in tokens (the outage cost). Like MismatchObserver it is found
// by a type assertion; the handler counts tokens only when its Observer
// implements it or a token budget is set.
type CostObserver interface {
	TurnCost(ctx context.Context, ev TurnCostEvent)
}

// What a turn met, as TurnCostEvent.Met names it (the `met` attribute of
// the outage-cost metric).
const (
	MetShortCircuit = "short_circuit"
	MetStall        = "stall"
	MetFailover     = "failover"
)

// TurnCostEvent is sent once per root turn, when its run ends (AfterRun of
// the root invocation): the tokens its model responses reported, sub-agents
// reached through agent tools included, and what the turn met.
type TurnCostEvent struct {
	InvocationID string
	// Tokens is the sum over the turn's complete (non-partial) model
	// responses of their usage metadata: the total token count, or else
	// prompt + candidates + thoughts (+ tool-use prompt). Responses without
	// usage metadata (the plugin's own final answers) count 0.
	Tokens int64
	// ShortCircuit: a call of the turn was refused by an open breaker (a
	// tool's, or every model endpoint's), or a failover model answered that
	// no endpoint could.
	ShortCircuit bool
	// Failover: a model response of the turn came from an endpoint other
	// than the first (failover.AttrFailoverFrom was set).
	Failover bool
	// Stall: a model response of the turn failed over because an endpoint
	// stalled (failover reason "stall"), or a model call ended because its
	// endpoint stalled after the first chunk (ErrModelStall).
	Stall bool
}

// Met names what the turn met, for the `met` attribute: MetShortCircuit,
// else MetStall, else MetFailover (one value per turn, so that summing
// over `met` counts each turn's tokens once), or "" for a turn that met
// none of them.
func (ev TurnCostEvent) Met() string {
	switch {
	case ev.ShortCircuit:
		return MetShortCircuit
	case ev.Stall:
		return MetStall
	case ev.Failover:
		return MetFailover
	}
	return ""
}

// ErrModelStall matches (errors.Is) the error of a model call that ended
// because its endpoint stalled after streaming part of the answer
// (failover.ErrStall is this error). The plugin marks the turn as having
// met a stall (TurnCostEvent.Stall).
var ErrModelStall = errors.New("failover: model endpoint stalled")
