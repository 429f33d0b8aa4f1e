package breaker_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
)

// TestCallDurationOfGuardedCalls: on the real runner, each call that reached
// its tool is timed by the guard and recorded by outcome; short-circuited
// calls never are.
func TestCallDurationOfGuardedCalls(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	e.mustTurn("invoice 42?")
	e.backend.SetMode(fakebackend.Down)
	for range 5 { // 3 failures trip the breaker; 2 short-circuits
		e.mustTurn("invoice 42?")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "adkbreaker.call.duration" {
				for _, p := range h.DataPoints {
					o, _ := p.Attributes.Value("outcome")
					d, _ := p.Attributes.Value("dependency")
					got[d.AsString()+"/"+o.AsString()] += p.Count
				}
			}
		}
	}
	if got["billing-api/success"] != 1 || got["billing-api/failure"] != 3 || len(got) != 2 {
		t.Errorf("call durations = %v, want 1 success and 3 failures (short-circuits are not calls)", got)
	}
}
