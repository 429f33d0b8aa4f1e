package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// ShortCircuit counts one refused tool call and annotates the span current in
// ctx (ADK's "execute_tool {tool}" span, when called from BeforeTool). The
// metric path does not allocate once the attribute set of the event's
// (dependency, tool, reason, terminal) is cached; span attributes are built
// only when the span is recording.
func (in *Instrumentation) ShortCircuit(ctx context.Context, ev observe.ShortCircuitEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	k := scKey{dep: ev.Dependency, tool: ev.Tool, reason: string(ev.Reason), terminal: ev.Terminal, shadow: ev.Shadow}
	opts, ok := in.sc.get(k, mkShortCircuitSet)
	if !ok {
		opts = in.scOverflow[b2i(ev.Terminal)]
	}
	in.shortCircuits.Add(ctx, 1, opts...)
	if ev.Shadow {
		return // nothing was refused: no span annotation, no log record
	}
	in.logShortCircuit(ctx, ev)

	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Bool(SpanShortCircuited, true),
		attribute.String(SpanDependency, string(ev.Dependency)),
		attribute.String(SpanReason, string(ev.Reason)),
		attribute.String(SpanState, ev.State.String()),
		attribute.Float64(SpanRetryAfter, registry.RetrySeconds(ev.RetryAfter)),
		attribute.Int(SpanThisTurn, ev.ThisTurn),
		attribute.Bool(SpanTerminal, ev.Terminal),
		attribute.String(SpanTool, ev.Tool),
		attribute.Int(SpanTurnTotal, ev.TurnTotal),
	}
	span.SetAttributes(attrs[:7]...)
	span.AddEvent(EventShortCircuit, trace.WithAttributes(attrs[1:]...))
}

func mkShortCircuitSet(k scKey) []metric.AddOption {
	mode := ModeEnforce
	if k.shadow {
		mode = ModeShadow
	}
	return addOpts(
		attribute.String(AttrDependency, string(k.dep)),
		attribute.String(AttrTool, k.tool),
		attribute.String(AttrReason, k.reason),
		attribute.Bool(AttrTerminal, k.terminal),
		attribute.String(AttrMode, mode),
	)
}

// TurnEnded counts a turn ended by BeforeModel and adds an event to the span
// current in ctx (ADK's "invoke_agent {agent}" span in model callbacks).
func (in *Instrumentation) TurnEnded(ctx context.Context, ev observe.TurnEndEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	opts, ok := in.turns.get(ev.Reason, mkTurnSet)
	if !ok {
		opts = in.turnsOver
	}
	in.turnsEnded.Add(ctx, 1, opts...)
	in.logTurnEnded(ctx, ev)
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(EventTurnEnded, trace.WithAttributes(
		attribute.String(SpanReason, string(ev.Reason)),
		attribute.Int(SpanTurnTotal, ev.TurnTotal),
	))
}

func mkTurnSet(r observe.TurnEndReason) []metric.AddOption {
	return addOpts(attribute.String(AttrReason, string(r)))
}

// retrySeconds is a retry delay in seconds for gauges and span attributes:
// -1 for registry.UntilReset (an isolated dependency has no retry time).

// OutcomeMismatch counts a failed tool call that the plugin's after-tool
// callback was shown as a success (a plugin registered ahead of adkbreaker
// rewrote it), and adds an event to the span current in ctx.
func (in *Instrumentation) OutcomeMismatch(ctx context.Context, ev observe.MismatchEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	in.mismatches.Add(ctx, 1, metric.WithAttributes(
		attribute.String(AttrDependency, string(ev.Dependency)),
		attribute.String(AttrTool, ev.Tool),
	))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventOutcomeMismatch, trace.WithAttributes(attribute.String(SpanDependency, string(ev.Dependency))))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type annKey struct {
	dep  registry.Key
	tool string
}

// ShadowAnnotation counts one tool declaration a shadow-mode breaker left
// as it was in a model request (an enforcing one would have marked or
// removed it). Nothing is added to spans: nothing happened to the request.
func (in *Instrumentation) ShadowAnnotation(ctx context.Context, ev observe.ShadowAnnotationEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	opts, ok := in.annSets.get(annKey{dep: ev.Dependency, tool: ev.Tool}, mkAnnotationSet)
	if !ok {
		opts = mkAnnotationSet(annKey{dep: Overflow, tool: Overflow})
	}
	in.shadowAnn.Add(ctx, 1, opts...)
}

func mkAnnotationSet(k annKey) []metric.AddOption {
	return addOpts(attribute.String(AttrDependency, string(k.dep)), attribute.String(AttrTool, k.tool))
}
