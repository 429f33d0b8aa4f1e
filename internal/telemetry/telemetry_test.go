package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

type harness struct {
	in     *telemetry.Instrumentation
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	h.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	in, err := telemetry.New(h.mp, h.tp)
	if err != nil {
		t.Fatal(err)
	}
	h.in = in
	return h
}

// collect returns metric name → encoded attribute set → value.
func (h *harness) collect(t testing.TB) map[string]map[string]float64 {
	t.Helper()
	return collect(t, h.reader)
}

func collect(t testing.TB, r sdkmetric.Reader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	put := func(name string, set attribute.Set, v float64) {
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][set.Encoded(attribute.DefaultEncoder())] = v
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					put(m.Name+".count", p.Attributes, float64(p.Count))
					put(m.Name+".sum", p.Attributes, p.Sum)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					put(m.Name+".count", p.Attributes, float64(p.Count))
					put(m.Name+".sum", p.Attributes, float64(p.Sum))
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func spanAttrs(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

func TestNewRequiresProviders(t *testing.T) {
	if _, err := telemetry.New(nil, nil); err == nil || !strings.Contains(err.Error(), "meter provider") || !strings.Contains(err.Error(), "tracer provider") {
		t.Fatalf("New(nil, nil) err = %v, want both providers named", err)
	}
	if _, err := telemetry.New(metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider()); err != nil {
		t.Fatalf("noop providers: %v", err)
	}
}

func TestShortCircuitCountsAndAnnotatesTheCurrentSpan(t *testing.T) {
	h := newHarness(t)
	ctx, span := h.tp.Tracer("test").Start(context.Background(), "execute_tool get_invoice")
	ev := observe.ShortCircuitEvent{
		Dependency: "billing-api", Tool: "get_invoice", Reason: degrade.ReasonCircuitOpen,
		State: registry.StateOpen, RetryAfter: 1500 * time.Millisecond,
		ThisTurn: 2, TurnTotal: 3, Terminal: true, InvocationID: "inv-1",
	}
	h.in.ShortCircuit(ctx, ev)
	span.End()
	h.in.ShortCircuit(context.Background(), ev) // no span: counted only
	ev.Terminal, ev.Reason = false, degrade.ReasonHalfOpenBusy
	h.in.ShortCircuit(context.Background(), ev)

	got := h.collect(t)[telemetry.MetricShortCircuits]
	want := map[string]float64{
		"dependency=billing-api,mode=enforce,reason=circuit_open,terminal=true,tool=get_invoice":    2,
		"dependency=billing-api,mode=enforce,reason=half_open_busy,terminal=false,tool=get_invoice": 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s (-want +got):\n%s", telemetry.MetricShortCircuits, d)
	}

	ended := h.spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("spans = %d", len(ended))
	}
	wantAttrs := map[string]any{
		"adkbreaker.short_circuited": true,
		"adkbreaker.dependency":      "billing-api",
		"adkbreaker.reason":          "circuit_open",
		"adkbreaker.state":           "open",
		"adkbreaker.retry_after_s":   1.5,
		"adkbreaker.this_turn":       int64(2),
		"adkbreaker.terminal":        true,
	}
	if d := cmp.Diff(wantAttrs, spanAttrs(ended[0].Attributes())); d != "" {
		t.Fatalf("span attributes (-want +got):\n%s", d)
	}
	evs := ended[0].Events()
	if len(evs) != 1 || evs[0].Name != telemetry.EventShortCircuit {
		t.Fatalf("events = %+v", evs)
	}
	ea := spanAttrs(evs[0].Attributes)
	if ea["adkbreaker.tool"] != "get_invoice" || ea["adkbreaker.turn_total"] != int64(3) || ea["adkbreaker.dependency"] != "billing-api" {
		t.Fatalf("event attributes = %v", ea)
	}
	for k := range ea {
		if strings.Contains(k, "invocation") {
			t.Fatalf("invocation ID leaked into attributes: %v", ea)
		}
	}
}

func TestTurnEndedCountsAndAddsAnEvent(t *testing.T) {
	h := newHarness(t)
	ctx, span := h.tp.Tracer("test").Start(context.Background(), "invoke_agent billing_agent")
	h.in.TurnEnded(ctx, observe.TurnEndEvent{InvocationID: "i", Reason: observe.TurnEndShortCircuitBudget, TurnTotal: 5})
	h.in.TurnEnded(ctx, observe.TurnEndEvent{InvocationID: "i", Reason: observe.TurnEndModelUnavailable, TurnTotal: 1})
	span.End()
	want := map[string]float64{"reason=short_circuit_budget": 1, "reason=model_unavailable": 1}
	if d := cmp.Diff(want, h.collect(t)[telemetry.MetricTurnsEnded]); d != "" {
		t.Fatalf("turns_ended (-want +got):\n%s", d)
	}
	evs := h.spans.Ended()[0].Events()
	if len(evs) != 2 || evs[0].Name != telemetry.EventTurnEnded || spanAttrs(evs[0].Attributes)["adkbreaker.turn_total"] != int64(5) {
		t.Fatalf("events = %+v", evs)
	}
}

// tripper drives one breaker through closed → open → half_open → closed.
type tripper struct {
	t   *testing.T
	clk *registrytest.FakeClock
	reg *registry.Registry
	b   *registry.Breaker
}

func newTripper(t *testing.T) *tripper {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, DisableFailureRate: true,
	}))
	b, err := reg.Get("billing-api")
	if err != nil {
		t.Fatal(err)
	}
	return &tripper{t: t, clk: clk, reg: reg, b: b}
}

func (tr *tripper) call(o registry.Outcome) {
	tr.t.Helper()
	tk, d := tr.b.Admit()
	if !d.Allowed {
		tr.t.Fatalf("refused: %+v", d)
	}
	tk.Done(o)
}

func (tr *tripper) flush() {
	tr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.reg.Flush(ctx); err != nil {
		tr.t.Fatal(err)
	}
}

func TestTransitionsAreCountedWithCause(t *testing.T) {
	h := newHarness(t)
	tr := newTripper(t)
	stop := h.in.Watch(tr.reg)
	defer stop()

	tr.call(registry.Failure) // closed → open (trip)
	tr.flush()
	g := h.collect(t)
	if got := g[telemetry.MetricBreakerState]["dependency=billing-api"]; got != 2 {
		t.Fatalf("state gauge while open = %v, want 2", got)
	}
	if got := g[telemetry.MetricBreakerRetryAfter]["dependency=billing-api"]; got != 10 {
		t.Fatalf("retry_after while open = %v, want 10", got)
	}
	tr.clk.Advance(4 * time.Second)
	if got := h.collect(t)[telemetry.MetricBreakerRetryAfter]["dependency=billing-api"]; got != 6 {
		t.Fatalf("retry_after 4s later = %v, want 6", got)
	}
	tr.clk.Advance(6 * time.Second)
	tr.call(registry.Success) // open → half_open (hold_expired), then → closed (probe_succeeded)
	tr.flush()

	g = h.collect(t)
	want := map[string]float64{
		"cause=trip,dependency=billing-api,from=closed,to=open":                 1,
		"cause=hold_expired,dependency=billing-api,from=open,to=half_open":      1,
		"cause=probe_succeeded,dependency=billing-api,from=half_open,to=closed": 1,
	}
	if d := cmp.Diff(want, g[telemetry.MetricTransitions]); d != "" {
		t.Fatalf("transitions (-want +got):\n%s", d)
	}
	if got := g[telemetry.MetricBreakerState]["dependency=billing-api"]; got != 0 {
		t.Fatalf("state gauge after close = %v, want 0", got)
	}
	if got, ok := g[telemetry.MetricTransitionsDropped][""]; !ok || got != 0 {
		t.Fatalf("dropped = %v (observed %v), want 0", got, ok)
	}

	var causes []string
	for _, s := range h.spans.Ended() {
		if s.Name() != telemetry.SpanTransition {
			t.Fatalf("unexpected span %q", s.Name())
		}
		if s.Parent().IsValid() {
			t.Fatalf("transition span has a parent")
		}
		a := spanAttrs(s.Attributes())
		causes = append(causes, fmt.Sprintf("%v:%v→%v", a["adkbreaker.cause"], a["adkbreaker.from"], a["adkbreaker.to"]))
		if a["adkbreaker.cause"] == "trip" && a["adkbreaker.retry_after_s"] != 10.0 {
			t.Fatalf("trip span retry_after_s = %v", a["adkbreaker.retry_after_s"])
		}
	}
	wantCauses := []string{"trip:closed→open", "hold_expired:open→half_open", "probe_succeeded:half_open→closed"}
	if d := cmp.Diff(wantCauses, causes); d != "" {
		t.Fatalf("transition spans (-want +got):\n%s", d)
	}
}

func TestIsolatedReportsOpen(t *testing.T) {
	h := newHarness(t)
	tr := newTripper(t)
	defer h.in.Watch(tr.reg)()
	if err := tr.reg.Isolate("search-api"); err != nil {
		t.Fatal(err)
	}
	tr.flush()
	g := h.collect(t)
	if d := cmp.Diff(map[string]float64{"dependency=billing-api": 0, "dependency=search-api": 2}, g[telemetry.MetricBreakerState]); d != "" {
		t.Fatalf("state gauge (-want +got):\n%s", d)
	}
	if got := g[telemetry.MetricTransitions]["cause=isolated,dependency=search-api,from=closed,to=open"]; got != 1 {
		t.Fatalf("isolation not counted: %v", g[telemetry.MetricTransitions])
	}
}

// TestSharedRegistryIsCountedOnce: two instrumentations (two plugins) on one
// meter provider watching one registry count each transition once; after
// the last stop nothing is counted or observed.
func TestSharedRegistryIsCountedOnce(t *testing.T) {
	h := newHarness(t)
	in2, err := telemetry.New(h.mp, h.tp)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTripper(t)
	stop1 := h.in.Watch(tr.reg)
	stop2 := in2.Watch(tr.reg)
	tr.call(registry.Failure)
	tr.flush()
	key := "cause=trip,dependency=billing-api,from=closed,to=open"
	if got := h.collect(t)[telemetry.MetricTransitions][key]; got != 1 {
		t.Fatalf("trip counted %v times", got)
	}
	if n := len(h.spans.Ended()); n != 1 {
		t.Fatalf("transition spans = %d, want 1", n)
	}
	stop1()
	stop1() // idempotent: must not release stop2's reference
	tr.reg.Reset("billing-api")
	tr.flush()
	if got := h.collect(t)[telemetry.MetricTransitions]["cause=reset,dependency=billing-api,from=open,to=closed"]; got != 1 {
		t.Fatalf("reset counted %v times while one watcher remains", got)
	}
	stop2()
	tr.call(registry.Failure)
	tr.flush()
	g := h.collect(t)
	if got := g[telemetry.MetricTransitions][key]; got != 1 {
		t.Fatalf("trip counted after stop: %v", got)
	}
	if len(g[telemetry.MetricBreakerState]) != 0 {
		t.Fatalf("state gauge still observed after stop: %v", g[telemetry.MetricBreakerState])
	}
}

// panicMeter's counters panic: a broken provider must not break a call.
type panicMeter struct{ metricnoop.Meter }

func (panicMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return panicCounter{}, nil
}

type panicCounter struct{ metricnoop.Int64Counter }

func (panicCounter) Add(context.Context, int64, ...metric.AddOption) { panic("exporter bug") }

type panicProvider struct{ metricnoop.MeterProvider }

func (panicProvider) Meter(string, ...metric.MeterOption) metric.Meter { return panicMeter{} }

func TestTelemetryFailureNeverFailsACall(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })

	in, err := telemetry.New(panicProvider{}, tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	in.ShortCircuit(context.Background(), observe.ShortCircuitEvent{Dependency: "d", Tool: "t"})
	in.TurnEnded(context.Background(), observe.TurnEndEvent{Reason: observe.TurnEndShortCircuitBudget})
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 2 || !strings.Contains(handled[0].Error(), "exporter bug") {
		t.Fatalf("handled = %v", handled)
	}
}

func TestNilInstrumentationIsANoop(t *testing.T) {
	var in *telemetry.Instrumentation
	in.ShortCircuit(context.Background(), observe.ShortCircuitEvent{})
	in.TurnEnded(context.Background(), observe.TurnEndEvent{})
	in.Watch(registry.MustNew())()
}

func TestErrorsFromNewAreReturned(t *testing.T) {
	_, err := telemetry.New(errProvider{}, tracenoop.NewTracerProvider())
	if !errors.Is(err, errInstrument) {
		t.Fatalf("err = %v", err)
	}
	names := []string{telemetry.MetricShortCircuits, telemetry.MetricTransitions, telemetry.MetricTurnsEnded,
		telemetry.MetricBreakerState, telemetry.MetricBreakerRetryAfter, telemetry.MetricTransitionsDropped}
	sort.Strings(names)
	for _, n := range names {
		if !strings.Contains(err.Error(), n+":") {
			t.Fatalf("error does not name %s: %v", n, err)
		}
	}
}

var errInstrument = errors.New("instrument refused")

type errMeter struct{ metricnoop.Meter }

func (errMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return metricnoop.Int64Counter{}, errInstrument
}
func (errMeter) Int64ObservableGauge(string, ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	return metricnoop.Int64ObservableGauge{}, errInstrument
}
func (errMeter) Float64ObservableGauge(string, ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	return metricnoop.Float64ObservableGauge{}, errInstrument
}
func (errMeter) Int64ObservableCounter(string, ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	return metricnoop.Int64ObservableCounter{}, errInstrument
}

type errProvider struct{ metricnoop.MeterProvider }

func (errProvider) Meter(string, ...metric.MeterOption) metric.Meter { return errMeter{} }
