package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/observe"
)

// Values of AttrAction on MetricLoopRepeats.
const (
	ActionNote    = "note"
	ActionEndTurn = "end_turn"
	// In shadow mode the guard only counts what it would have done.
	ActionShadowNote    = "shadow_note"
	ActionShadowEndTurn = "shadow_end_turn"
)

// EventRepeatedCall is the span event of a call the repeated-call guard
// answered.
const EventRepeatedCall = "adkbreaker.repeated_call"

var _ observe.RepeatObserver = (*Instrumentation)(nil)

// RepeatedCall counts a call the repeated-call guard answered
// (adkbreaker.loop.repeats, by dependency, tool and action) and adds an
// event to the span current in ctx. It is off the hot path: only repeats
// reach it.
func (in *Instrumentation) RepeatedCall(ctx context.Context, ev observe.RepeatEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	action := ActionNote
	if ev.EndsTurn {
		action = ActionEndTurn
	}
	if ev.Shadow { // would have: nothing reached the model
		action = ActionShadowNote
		if ev.EndsTurn {
			action = ActionShadowEndTurn
		}
	}
	in.repeats.Add(ctx, 1, metric.WithAttributes(
		attribute.String(AttrDependency, string(ev.Dependency)),
		attribute.String(AttrTool, ev.Tool),
		attribute.String(AttrAction, action),
	))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventRepeatedCall, trace.WithAttributes(
			attribute.String(SpanTool, ev.Tool),
			attribute.Int("adkbreaker.calls", ev.Calls),
			attribute.String(AttrAction, action),
		))
	}
}
