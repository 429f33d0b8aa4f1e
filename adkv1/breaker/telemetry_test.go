package breaker_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/internal/gctest"
	"github.com/adkbreaker/adkbreaker/internal/spantest"
	"github.com/adkbreaker/adkbreaker/registry"
)

// installGlobalTracer installs the process's recording global tracer
// provider (spantest.Global), which ADK's spans go to.
func installGlobalTracer() (*sdktrace.TracerProvider, *spantest.Recorder) { return spantest.Global() }

func spansOf(sr *spantest.Recorder, id trace.TraceID) []sdktrace.ReadOnlySpan { return sr.Trace(id) }

func attrMap(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// metrics returns metric name → encoded attributes → value.
func metrics(t testing.TB, r sdkmetric.Reader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if out[m.Name] == nil {
				out[m.Name] = map[string]float64{}
			}
			enc := attribute.DefaultEncoder()
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name][p.Attributes.Encoded(enc)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name][p.Attributes.Encoded(enc)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name][p.Attributes.Encoded(enc)] = p.Value
				}
			}
		}
	}
	return out
}

func flush(t testing.TB, reg *registry.Registry) {
	t.Helper()
	if err := reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestShortCircuitAnnotatesADKExecuteToolSpan runs the real ADK runner: the
// breaker trips through three failing turns, and the fourth turn's refused
// call is annotated on ADK's own "execute_tool get_invoice" span.
func TestShortCircuitAnnotatesADKExecuteToolSpan(t *testing.T) {
	tp, spans := installGlobalTracer()
	reader := sdkmetric.NewManualReader()
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("invoice 42?")
	}
	flush(t, e.reg)
	m := metrics(t, reader)
	if got := m["adkbreaker.transitions"]["cause=trip,dependency=billing-api,from=closed,to=open"]; got != 1 {
		t.Fatalf("trip not counted: %v", m["adkbreaker.transitions"])
	}
	if got := m["adkbreaker.breaker.state"]["dependency=billing-api"]; got != 2 {
		t.Fatalf("state gauge = %v, want 2 (open)", got)
	}
	if got := m["adkbreaker.breaker.retry_after"]["dependency=billing-api"]; got != 30 {
		t.Fatalf("retry_after gauge = %v, want 30", got)
	}

	ctx, root := tp.Tracer("test").Start(t.Context(), "test-turn")
	if _, err := e.turn(ctx, "invoice 42?"); err != nil {
		t.Fatal(err)
	}
	root.End()

	var tool sdktrace.ReadOnlySpan
	var names []string
	for _, s := range spansOf(spans, root.SpanContext().TraceID()) {
		names = append(names, s.Name())
		if s.Name() == "execute_tool get_invoice" {
			tool = s
		}
	}
	if tool == nil {
		t.Fatalf("no execute_tool get_invoice span among %v", names)
	}
	a := attrMap(tool.Attributes())
	want := map[string]any{
		"adkbreaker.short_circuited": true,
		"adkbreaker.dependency":      "billing-api",
		"adkbreaker.reason":          "circuit_open",
		"adkbreaker.state":           "open",
		"adkbreaker.retry_after_s":   30.0,
		"adkbreaker.this_turn":       int64(1),
		"adkbreaker.terminal":        false,
		"gen_ai.tool.name":           "get_invoice", // ADK's own: it is ADK's span
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s = %#v, want %#v", k, a[k], v)
		}
	}
	var ev bool
	for _, x := range tool.Events() {
		ev = ev || x.Name == "adkbreaker.short_circuit"
	}
	if !ev {
		t.Errorf("no adkbreaker.short_circuit event on the span: %+v", tool.Events())
	}
	// docs/telemetry.md promises Unset: the payload has no "error" key, and
	// ADK marks execute_tool Error only for results with one.
	if st := tool.Status(); st.Code != codes.Unset {
		t.Errorf("execute_tool status for a short-circuit = %v %q, want Unset (update docs/telemetry.md if this changed on purpose)", st.Code, st.Description)
	}

	m = metrics(t, reader)
	if got := m["adkbreaker.short_circuits"]["dependency=billing-api,mode=enforce,reason=circuit_open,terminal=false,tool=get_invoice"]; got != 1 {
		t.Fatalf("short_circuits = %v", m["adkbreaker.short_circuits"])
	}
}

// TestTurnEndedIsCountedAndOnInvokeAgent: the turn budget ends the turn; the
// event lands on ADK's invoke_agent span (current in BeforeModel).
func TestTurnEndedIsCountedAndOnInvokeAgent(t *testing.T) {
	tp, spans := installGlobalTracer()
	reader := sdkmetric.NewManualReader()
	e2 := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": strconv.Itoa(len(req.Contents))}}) // another invoice each time: no repeat
	}, breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err := e2.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(t.Context(), "test-turn")
	if _, err := e2.turn(ctx, "keep trying"); err != nil {
		t.Fatal(err)
	}
	root.End()
	m := metrics(t, reader)
	if got := m["adkbreaker.turns_ended"]["reason=short_circuit_budget"]; got != 1 {
		t.Fatalf("turns_ended = %v", m["adkbreaker.turns_ended"])
	}
	if got := m["adkbreaker.short_circuits"]["dependency=billing-api,mode=enforce,reason=isolated,terminal=true,tool=get_invoice"]; got != 4 {
		t.Fatalf("short_circuits = %v (want 1 non-terminal + 4 terminal)", m["adkbreaker.short_circuits"])
	}
	var on []string
	for _, s := range spansOf(spans, root.SpanContext().TraceID()) {
		for _, x := range s.Events() {
			if x.Name == "adkbreaker.turn_ended" {
				on = append(on, s.Name())
			}
		}
	}
	if len(on) != 1 || !strings.HasPrefix(on[0], "invoke_agent") {
		t.Fatalf("adkbreaker.turn_ended on spans %v, want one invoke_agent", on)
	}
}

type recordingObserver struct {
	mu  sync.Mutex
	scs []callbacks.ShortCircuitEvent
}

func (o *recordingObserver) ShortCircuit(_ context.Context, ev callbacks.ShortCircuitEvent) {
	o.mu.Lock()
	o.scs = append(o.scs, ev)
	o.mu.Unlock()
}
func (o *recordingObserver) TurnEnded(context.Context, callbacks.TurnEndEvent) {}

func (o *recordingObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.scs)
}

// TestTelemetryKeepsTheUsersObserver: WithObserver and telemetry both see
// every event, whichever option comes first.
func TestTelemetryKeepsTheUsersObserver(t *testing.T) {
	for _, observerFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("observerFirst=%v", observerFirst), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			obs := &recordingObserver{}
			opts := []breaker.Option{breaker.WithObserver(obs), breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}
			if !observerFirst {
				opts[0], opts[1] = opts[1], opts[0]
			}
			e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}), opts...)
			_ = e.reg.Isolate("billing-api")
			e.mustTurn("one")
			if obs.count() != 1 {
				t.Fatalf("user observer saw %d short-circuits", obs.count())
			}
			if got := metrics(t, reader)["adkbreaker.short_circuits"]["dependency=billing-api,mode=enforce,reason=isolated,terminal=false,tool=get_invoice"]; got != 1 {
				t.Fatalf("telemetry counted %v", got)
			}
		})
	}
}

// TestWithTelemetryResolvesGlobalsAtNew: a meter provider installed after
// this package was initialised, but before New, is used.
func TestWithTelemetryResolvesGlobalsAtNew(t *testing.T) {
	installGlobalTracer()
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	h, err := breaker.NewHandler(breaker.WithTelemetry(), breaker.WithDependency("billing-api", "get_invoice"))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Registry().Isolate("billing-api")
	flush(t, h.Registry())
	if got := metrics(t, reader)["adkbreaker.transitions"]["cause=isolated,dependency=billing-api,from=closed,to=open"]; got != 1 {
		t.Fatalf("transitions via the global provider = %v", got)
	}
}

// TestSharedRegistryTransitionsCountedOnce: two plugins sharing a registry
// and a meter provider count each transition once.
func TestSharedRegistryTransitionsCountedOnce(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg := registry.MustNew()
	var hs []*callbacks.Handler
	for range 2 {
		h, err := breaker.NewHandler(breaker.WithRegistry(reg), breaker.WithMeterProvider(mp), breaker.WithDependency("billing-api", "get_invoice"))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	_ = reg.Isolate("billing-api")
	flush(t, reg)
	if got := metrics(t, reader)["adkbreaker.transitions"]["cause=isolated,dependency=billing-api,from=closed,to=open"]; got != 1 {
		t.Fatalf("isolation counted %v times", got)
	}
	_ = hs
}

func TestTelemetryOptionErrors(t *testing.T) {
	_, err := breaker.New(breaker.WithMeterProvider(nil), breaker.WithTracerProvider(nil))
	if err == nil || !strings.Contains(err.Error(), "meter provider: must not be nil") || !strings.Contains(err.Error(), "tracer provider: must not be nil") {
		t.Fatalf("err = %v", err)
	}
}

// Metrics of a plugin whose dependency an operator isolated.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader() // in production: a periodic reader and an exporter
	h, err := breaker.NewHandler(
		breaker.WithDependency("billing-api", "get_invoice"),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
	)
	if err != nil {
		panic(err)
	}
	// The gauges are observed as long as the handler is reachable (a
	// runner holds it in a real program).
	defer runtime.KeepAlive(h)
	_ = h.Registry().Isolate("billing-api")
	_ = h.Registry().Flush(context.Background())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			for _, p := range g.DataPoints {
				v, _ := p.Attributes.Value("dependency")
				fmt.Printf("%s %s=%d\n", m.Name, v.AsString(), p.Value)
			}
		}
	}
	// Output:
	// adkbreaker.breaker.state billing-api=2
}

// TestDroppedHandlerReleasesTelemetry: ADK never closes plugins, so the
// registry watch ends when the handler is garbage collected; a program that
// builds plugins repeatedly does not accumulate gauge callbacks.
func TestDroppedHandlerReleasesTelemetry(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	reg := func() *registry.Registry {
		h, err := breaker.NewHandler(breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
			breaker.WithDependency("billing-api", "get_invoice"))
		if err != nil {
			t.Fatal(err)
		}
		_ = h.Registry().Isolate("billing-api")
		// h is still live: a collection must not release its gauges.
		gctest.Collect()
		if got := metrics(t, reader)["adkbreaker.breaker.state"]["dependency=billing-api"]; got != 2 {
			t.Fatalf("state gauge = %v before the handler was dropped", got)
		}
		runtime.KeepAlive(h)
		return h.Registry()
	}()
	// Each Collect runs the cleanups it queues; a few allow for a stack
	// slot that keeps h reachable a little longer than its last use.
	for i := 0; len(metrics(t, reader)["adkbreaker.breaker.state"]) != 0; i++ {
		if i == 10 {
			t.Fatal("gauge callback still registered after the handler was collected")
		}
		gctest.Collect()
	}
	reg.Reset("billing-api")
	flush(t, reg)
	if got := metrics(t, reader)["adkbreaker.transitions"]["cause=reset,dependency=billing-api,from=open,to=closed"]; got != 0 {
		t.Fatalf("transition counted after release: %v", got)
	}
}
