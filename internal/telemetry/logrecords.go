package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/global"

	"github.com/adkbreaker/adkbreaker/callbacks"
)

// Log record event names. ADK's web UI drops span events but keeps log
// records linked to a span (its debug telemetry's log processor), so each
// short-circuit and ended turn is mirrored as one: the trace panel then
// shows them under the execute_tool or invoke_agent span they belong to.
const (
	RecordShortCircuit = "adkbreaker.short_circuit"
	RecordTurnEnded    = "adkbreaker.turn_ended"
)

// SetLoggerProvider sets where the mirrored log records go. New uses the
// global provider (otel/log/global), as ADK does, which is where ADK's
// launchers install theirs. Pass noop.NewLoggerProvider() to turn them off.
func (in *Instrumentation) SetLoggerProvider(lp log.LoggerProvider) {
	if in == nil || lp == nil {
		return
	}
	in.logger = lp.Logger(ScopeName)
}

func defaultLogger() log.Logger { return global.GetLoggerProvider().Logger(ScopeName) }

// logShortCircuit mirrors a short-circuit. Every value is bounded and from
// configuration or a closed set: the same fields as the payload the model
// reads, never upstream text.
func (in *Instrumentation) logShortCircuit(ctx context.Context, ev callbacks.ShortCircuitEvent) {
	in.emit(ctx, RecordShortCircuit, "adkbreaker short-circuited a call: the dependency is unavailable",
		attribute.String(AttrDependency, string(ev.Dependency)),
		attribute.String(AttrTool, ev.Tool),
		attribute.String(AttrReason, string(ev.Reason)),
		attribute.Float64("retry_after_s", ev.RetryAfter.Seconds()),
		attribute.Int("this_turn", ev.ThisTurn),
		attribute.Bool(AttrTerminal, ev.Terminal),
	)
}

func (in *Instrumentation) logTurnEnded(ctx context.Context, ev callbacks.TurnEndEvent) {
	in.emit(ctx, RecordTurnEnded, "adkbreaker ended the turn with a final answer",
		attribute.String(AttrReason, string(ev.Reason)), attribute.Int("turn_total", ev.TurnTotal))
}

// emit writes one WARN record linked to the span in ctx, only when a
// processor wants it: without one (the default global provider is a no-op)
// it costs the Enabled call, and the attributes are not even built into a
// record.
func (in *Instrumentation) emit(ctx context.Context, event, body string, attrs ...attribute.KeyValue) {
	if !in.logger.Enabled(ctx, log.EnabledParameters{Severity: log.SeverityWarn, EventName: event}) {
		return
	}
	var r log.Record
	r.SetEventName(event)
	r.SetSeverity(log.SeverityWarn)
	r.SetSeverityText("WARN")
	setBody(&r, body, attrs)
	in.logger.Emit(ctx, r)
}
