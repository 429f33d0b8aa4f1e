package breaker

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"go.opentelemetry.io/otel"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/internal/telemetry"
)

// WithTelemetry turns on OpenTelemetry metrics and span annotations with the
// global providers, otel.GetMeterProvider and otel.GetTracerProvider, as
// they are when New runs (not when this package is initialised): install
// your providers before calling New. See docs/telemetry.md for every name.
func WithTelemetry() Option {
	return optionFunc(func(s *settings) { s.telemetry() })
}

// WithMeterProvider turns on telemetry and records adkbreaker's metrics
// (short-circuits, transitions, ended turns, breaker state gauges) with mp.
// The tracer provider stays the global one unless WithTracerProvider is
// also given. The gauges are observed for as long as the plugin (or
// handler) is reachable: a runner holds it; code that keeps only the
// registry loses them at the next garbage collection.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(s *settings) {
		if mp == nil {
			s.errs = append(s.errs, errors.New("meter provider: must not be nil"))
			return
		}
		s.telemetry().mp = mp
	})
}

// WithTracerProvider turns on telemetry and records adkbreaker's own spans
// (one short "adkbreaker.transition" root span per breaker state change)
// with tp. The meter provider stays the global one unless WithMeterProvider
// is also given.
//
// Short-circuit and turn-end annotations are not affected: they are added to
// the span current in ADK's callback context (execute_tool, invoke_agent),
// which ADK creates with the global tracer provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(s *settings) {
		if tp == nil {
			s.errs = append(s.errs, errors.New("tracer provider: must not be nil"))
			return
		}
		s.telemetry().tp = tp
	})
}

// WithLoggerProvider turns on telemetry and mirrors every short-circuit and
// ended turn as an OpenTelemetry log record, linked to the span current in
// the callback (ADK's execute_tool or invoke_agent), through lp. Without it
// the records go to the global logger provider (otel/log/global), which is
// where ADK's launchers install theirs: ADK's web UI drops span events but
// shows span-linked log records, so that is how short-circuits become
// visible there. Pass otel/log/noop's provider to turn them off.
func WithLoggerProvider(lp otellog.LoggerProvider) Option {
	return optionFunc(func(s *settings) {
		if lp == nil {
			s.errs = append(s.errs, errors.New("logger provider: must not be nil"))
			return
		}
		s.telemetry().lp = lp
	})
}

// telemetryConfig is set by the options above; nil means telemetry is off.
// Unset providers are resolved from the OTel globals when New runs.
type telemetryConfig struct {
	mp metric.MeterProvider
	tp trace.TracerProvider
	lp otellog.LoggerProvider
}

func (s *settings) telemetry() *telemetryConfig {
	if s.tel == nil {
		s.tel = &telemetryConfig{}
	}
	return s.tel
}

// attach creates the instrumentation and adds it to cb.Observer, keeping an
// observer set with WithObserver (both receive every event). The returned
// watch starts observing the handler's registry; build calls it only once
// the handler exists, so a failed New leaves nothing registered. A nil t
// (telemetry off) does nothing.
func (t *telemetryConfig) attach(cb *callbacks.Config) (watch func(*callbacks.Handler), err error) {
	nop := func(*callbacks.Handler) {}
	if t == nil {
		return nop, nil
	}
	mp, tp := t.mp, t.tp
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	in, err := telemetry.New(mp, tp)
	if err != nil {
		return nop, fmt.Errorf("telemetry: %w", err)
	}
	in.SetRecordSink(newRecordSink(t.lp))
	cb.Observer = fanOut(cb.Observer, in)
	return func(h *callbacks.Handler) {
		stop := in.Watch(h.Registry())
		// ADK never closes plugins. The watch lasts as long as the handler
		// (the plugin's callbacks hold it); once the handler is collected,
		// its subscription and gauge callback are released, so programs that
		// build plugins repeatedly do not accumulate them.
		runtime.AddCleanup(h, func(stop func()) { stop() }, stop)
	}, nil
}

// observers fans each event out to several observers, in order.
type observers []callbacks.Observer

func fanOut(existing, added callbacks.Observer) callbacks.Observer {
	if existing == nil {
		return added
	}
	return observers{existing, added}
}

func (o observers) ShortCircuit(ctx context.Context, ev callbacks.ShortCircuitEvent) {
	for _, x := range o {
		x.ShortCircuit(ctx, ev)
	}
}

func (o observers) TurnEnded(ctx context.Context, ev callbacks.TurnEndEvent) {
	for _, x := range o {
		x.TurnEnded(ctx, ev)
	}
}

// CallEnded forwards to the observers that want every call's end.
func (o observers) CallEnded(ctx context.Context, ev callbacks.CallEvent) {
	for _, x := range o {
		if co, ok := x.(callbacks.CallObserver); ok {
			co.CallEnded(ctx, ev)
		}
	}
}

// OutcomeMismatch forwards to the observers that want mismatches.
func (o observers) OutcomeMismatch(ctx context.Context, ev callbacks.MismatchEvent) {
	for _, x := range o {
		if m, ok := x.(callbacks.MismatchObserver); ok {
			m.OutcomeMismatch(ctx, ev)
		}
	}
}

// ShadowAnnotation forwards to the observers that want what shadow-mode
// breakers left unchanged in model requests.
func (o observers) ShadowAnnotation(ctx context.Context, ev callbacks.ShadowAnnotationEvent) {
	for _, x := range o {
		if so, ok := x.(callbacks.ShadowObserver); ok {
			so.ShadowAnnotation(ctx, ev)
		}
	}
}
