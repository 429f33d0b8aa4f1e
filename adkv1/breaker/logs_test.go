package breaker_test

import (
	"context"
	"sync"
	"testing"

	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
)

// logRecorder is an sdk/log processor that keeps every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []sdklog.Record
}

func (r *logRecorder) OnEmit(_ context.Context, rec *sdklog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (r *logRecorder) Shutdown(context.Context) error                         { return nil }
func (r *logRecorder) ForceFlush(context.Context) error                       { return nil }

// TestShortCircuitsAreSpanLinkedLogRecords: on the real runner, a refused
// call is mirrored as a log record carrying the trace and span of ADK's
// execute_tool span (what ADK's web UI shows), with only configured names and
// closed-set values in it.
func TestShortCircuitsAreSpanLinkedLogRecords(t *testing.T) {
	tp, spans := installGlobalTracer()
	rec := &logRecorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}), breaker.WithLoggerProvider(lp))
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("invoice 42?")
	}
	if n := len(rec.recs); n != 0 {
		t.Fatalf("%d records before any short-circuit", n)
	}
	ctx, root := tp.Tracer("test").Start(t.Context(), "test-turn")
	if _, err := e.turn(ctx, "invoice 42?"); err != nil {
		t.Fatal(err)
	}
	root.End()

	var tool string
	for _, s := range spansOf(spans, root.SpanContext().TraceID()) {
		if s.Name() == "execute_tool get_invoice" {
			tool = s.SpanContext().SpanID().String()
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 1 {
		t.Fatalf("%d log records, want 1", len(rec.recs))
	}
	r := rec.recs[0]
	if r.EventName() != "adkbreaker.short_circuit" || r.TraceID() != root.SpanContext().TraceID() || r.SpanID().String() != tool || tool == "" {
		t.Errorf("record %q trace %s span %s, want linked to execute_tool span %s of trace %s",
			r.EventName(), r.TraceID(), r.SpanID(), tool, root.SpanContext().TraceID())
	}
	got := recordAttrs(&r)
	if got["dependency"] != "billing-api" || got["tool"] != "get_invoice" || got["reason"] != "circuit_open" {
		t.Errorf("attributes = %v", got)
	}
}
