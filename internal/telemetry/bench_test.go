package telemetry_test

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

var benchEvent = observe.ShortCircuitEvent{
	Dependency: "billing-api", Tool: "get_invoice", Reason: degrade.ReasonCircuitOpen,
	State: registry.StateOpen, RetryAfter: 30 * time.Second, ThisTurn: 1, TurnTotal: 1, InvocationID: "inv",
}

// BenchmarkShortCircuitObserver measures the observer on the refused path.
// "sdk" records into the SDK's in-memory pipeline with no span (or a
// non-recording one) in the context: the metric path must not allocate
// after warm-up. "sdk+recording-span" also annotates a sampled span.
func BenchmarkShortCircuitObserver(b *testing.B) {
	run := func(b *testing.B, in *telemetry.Instrumentation, ctx context.Context) {
		in.ShortCircuit(ctx, benchEvent) // warm the attribute-set cache
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			in.ShortCircuit(ctx, benchEvent)
		}
	}
	b.Run("noop-providers", func(b *testing.B) {
		in, err := telemetry.New(metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider())
		if err != nil {
			b.Fatal(err)
		}
		run(b, in, context.Background())
	})
	b.Run("sdk", func(b *testing.B) {
		h := newHarness(b)
		run(b, h.in, context.Background())
	})
	b.Run("sdk+unsampled-span", func(b *testing.B) {
		h := newHarness(b)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		ctx, span := tp.Tracer("b").Start(context.Background(), "execute_tool get_invoice")
		defer span.End()
		run(b, h.in, ctx)
	})
	b.Run("sdk+recording-span", func(b *testing.B) {
		// A fresh sampled span per call, as ADK's execute_tool is; span
		// creation and End are outside the timer.
		h := newHarness(b)
		tp := sdktrace.NewTracerProvider()
		tr := tp.Tracer("b")
		h.in.ShortCircuit(context.Background(), benchEvent)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			ctx, span := tr.Start(context.Background(), "execute_tool get_invoice")
			if !span.IsRecording() {
				b.Fatal("span not recording")
			}
			b.StartTimer()
			h.in.ShortCircuit(ctx, benchEvent)
			b.StopTimer()
			span.End()
			b.StartTimer()
		}
	})
	b.Run("sdk-parallel", func(b *testing.B) {
		h := newHarness(b)
		h.in.ShortCircuit(context.Background(), benchEvent)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(context.Background()))
			for pb.Next() {
				h.in.ShortCircuit(ctx, benchEvent)
			}
		})
	})
}

func BenchmarkTurnEnded(b *testing.B) {
	h := newHarness(b)
	ev := observe.TurnEndEvent{InvocationID: "inv", Reason: observe.TurnEndShortCircuitBudget, TurnTotal: 5}
	h.in.TurnEnded(context.Background(), ev)
	b.ReportAllocs()
	for b.Loop() {
		h.in.TurnEnded(context.Background(), ev)
	}
}
