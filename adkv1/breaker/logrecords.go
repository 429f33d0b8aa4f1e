package breaker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/global"

	"github.com/adkbreaker/adkbreaker/internal/telemetry"
)

// recordSink writes telemetry's mirrored log records through the otel/log
// version this ADK line pins (setBody, logrecords_adkv*.go, is the one line
// where the versions differ). A nil provider is the global one
// (otel/log/global) when the plugin is built, as ADK does, which is where
// ADK's launchers install theirs.
type recordSink struct{ logger otellog.Logger }

func newRecordSink(lp otellog.LoggerProvider) *recordSink {
	if lp == nil {
		lp = global.GetLoggerProvider()
	}
	return &recordSink{logger: lp.Logger(telemetry.ScopeName)}
}

func (s *recordSink) Enabled(ctx context.Context, event string) bool {
	return s.logger.Enabled(ctx, otellog.EnabledParameters{Severity: otellog.SeverityWarn, EventName: event})
}

func (s *recordSink) Emit(ctx context.Context, event, body string, attrs []attribute.KeyValue) {
	var r otellog.Record
	r.SetEventName(event)
	r.SetSeverity(otellog.SeverityWarn)
	r.SetSeverityText("WARN")
	setBody(&r, body, attrs)
	s.logger.Emit(ctx, r)
}
