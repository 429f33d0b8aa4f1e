package callbacks

import "github.com/adkbreaker/adkbreaker/observe"

// The events the handler reports are declared once, ADK-free, in package
// observe (so telemetry serves both ADK lines); these aliases keep them
// under the names callbacks has always given them.
type (
	// Observer receives the handler's events, for telemetry. Methods are
	// called on the caller's goroutine and must be fast and non-blocking.
	// Breaker state transitions are not here: subscribe to the registry.
	Observer = observe.Observer
	// ShortCircuitEvent describes one refused tool call.
	ShortCircuitEvent = observe.ShortCircuitEvent
	// MismatchObserver is implemented by Observers that also want outcome
	// mismatches (see observe.MismatchObserver).
	MismatchObserver = observe.MismatchObserver
	// MismatchEvent describes one outcome mismatch.
	MismatchEvent = observe.MismatchEvent
	// ShadowObserver is implemented by Observers that also want what a
	// breaker in shadow mode would have changed in a model request.
	ShadowObserver = observe.ShadowObserver
	// ShadowAnnotationEvent describes one tool declaration left as it was
	// because its breaker is in shadow mode.
	ShadowAnnotationEvent = observe.ShadowAnnotationEvent
	// CallObserver is implemented by Observers that also want the duration
	// and outcome of every guarded tool call that really ran.
	CallObserver = observe.CallObserver
	// CallEvent describes one guarded call that reached its tool.
	CallEvent = observe.CallEvent
	// RepeatObserver is implemented by Observers that also want the
	// repeated-call guard's decisions.
	RepeatObserver = observe.RepeatObserver
	// RepeatEvent describes a call the repeated-call guard answered.
	RepeatEvent = observe.RepeatEvent
	// TurnEndReason says why the plugin ended a turn.
	TurnEndReason = observe.TurnEndReason
	// TurnEndEvent describes a turn the plugin ended.
	TurnEndEvent = observe.TurnEndEvent
)

// Why the plugin ended a turn (TurnEndEvent.Reason).
const (
	TurnEndShortCircuitBudget = observe.TurnEndShortCircuitBudget
	TurnEndModelUnavailable   = observe.TurnEndModelUnavailable
	TurnEndModelCallBudget    = observe.TurnEndModelCallBudget
	TurnEndTimeBudget         = observe.TurnEndTimeBudget
	TurnEndRepeatedCall       = observe.TurnEndRepeatedCall
)
