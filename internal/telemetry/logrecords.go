package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/adkbreaker/adkbreaker/observe"
)

// Log record event names. ADK's web UI drops span events but keeps log
// records linked to a span (its debug telemetry's log processor), so each
// short-circuit and ended turn is mirrored as one: the trace panel then
// shows them under the execute_tool or invoke_agent span they belong to.
const (
	RecordShortCircuit = "adkbreaker.short_circuit"
	RecordTurnEnded    = "adkbreaker.turn_ended"
)

// RecordSink writes the mirrored log records as WARN records under
// ScopeName, linked to the span in ctx. The OpenTelemetry logs API
// (go.opentelemetry.io/otel/log) is still v0.x and each ADK line pins its
// own version of it (ADK v1.7.0 v0.21, ADK v2.2.0 v0.20), so this package
// does not import it: each line's plugin implements RecordSink with the
// version its ADK uses.
type RecordSink interface {
	// Enabled reports whether a record of this event would be kept; when it
	// is false, the record is not built.
	Enabled(ctx context.Context, event string) bool
	// Emit writes one record.
	Emit(ctx context.Context, event, body string, attrs []attribute.KeyValue)
}

// SetRecordSink sets where the mirrored log records go; nil (the default)
// writes none.
func (in *Instrumentation) SetRecordSink(s RecordSink) {
	if in == nil {
		return
	}
	in.records = s
}

// logShortCircuit mirrors a short-circuit. Every value is bounded and from
// configuration or a closed set: the same fields as the payload the model
// reads, never upstream text.
func (in *Instrumentation) logShortCircuit(ctx context.Context, ev observe.ShortCircuitEvent) {
	if in.records == nil || !in.records.Enabled(ctx, RecordShortCircuit) {
		return
	}
	in.records.Emit(ctx, RecordShortCircuit, "adkbreaker short-circuited a call: the dependency is unavailable", []attribute.KeyValue{
		attribute.String(AttrDependency, string(ev.Dependency)),
		attribute.String(AttrTool, ev.Tool),
		attribute.String(AttrReason, string(ev.Reason)),
		attribute.Float64("retry_after_s", ev.RetryAfter.Seconds()),
		attribute.Int("this_turn", ev.ThisTurn),
		attribute.Bool(AttrTerminal, ev.Terminal),
	})
}

func (in *Instrumentation) logTurnEnded(ctx context.Context, ev observe.TurnEndEvent) {
	if in.records == nil || !in.records.Enabled(ctx, RecordTurnEnded) {
		return
	}
	in.records.Emit(ctx, RecordTurnEnded, "adkbreaker ended the turn with a final answer", []attribute.KeyValue{
		attribute.String(AttrReason, string(ev.Reason)), attribute.Int("turn_total", ev.TurnTotal),
	})
}
