// Package spantest records the spans ADK creates, for tests.
//
// ADK's tracer delegates to the global tracer provider, and the global
// delegate binds once per process: every later ADK span in a test binary
// goes to the first provider installed. Global installs one, once, whose
// Recorder keeps only the spans of traces rooted by a test's own tracer
// named "test", so that other tests' turns (a soak test runs 100,000) are
// not retained.
package spantest

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

var (
	once     sync.Once
	recorder *Recorder
	provider *sdktrace.TracerProvider
)

// Global installs the process's global tracer provider on first use and
// returns it with its recorder. Start a test's root span with
// tp.Tracer("test") and read its trace with Recorder.Trace.
func Global() (*sdktrace.TracerProvider, *Recorder) {
	once.Do(func() {
		recorder = &Recorder{roots: map[trace.TraceID]bool{}}
		provider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
		otel.SetTracerProvider(provider)
	})
	return provider, recorder
}

// Recorder is a span processor that records the ended spans of traces whose
// root was started by the tracer named "test", and drops every other span.
type Recorder struct {
	mu    sync.Mutex
	roots map[trace.TraceID]bool
	ended []sdktrace.ReadOnlySpan
}

func (r *Recorder) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.InstrumentationScope().Name == "test" && !s.Parent().IsValid() {
		r.mu.Lock()
		r.roots[s.SpanContext().TraceID()] = true
		r.mu.Unlock()
	}
}

func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	if r.roots[s.SpanContext().TraceID()] {
		r.ended = append(r.ended, s)
	}
	r.mu.Unlock()
}

func (r *Recorder) Shutdown(context.Context) error   { return nil }
func (r *Recorder) ForceFlush(context.Context) error { return nil }

// Trace returns the recorded ended spans of trace id, in the order they
// ended.
func (r *Recorder) Trace(id trace.TraceID) []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.ended {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}
