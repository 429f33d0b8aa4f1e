package telemetry_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestDashboardInstruments: the failure-rate gauge follows the window, each
// probe round is counted by outcome, and the time a dependency was
// unavailable is recorded once, when it closes again.
func TestDashboardInstruments(t *testing.T) {
	h := newHarness(t)
	tr := newTripper(t)
	defer h.in.Watch(tr.reg)()

	if _, ok := h.collect(t)[telemetry.MetricFailureRate]; ok {
		t.Fatal("failure rate reported before any call was counted")
	}
	tr.call(registry.Failure) // closed → open at t0
	tr.flush()
	if got := h.collect(t)[telemetry.MetricOpenDuration+".count"]; len(got) != 0 {
		t.Fatalf("open duration recorded while still open: %v", got)
	}
	tr.clk.Advance(10 * time.Second)
	tr.call(registry.Failure) // probe fails: half_open → open (hold 10s, no backoff growth configured? see policy)
	tr.flush()
	tr.clk.Advance(time.Minute)
	tr.call(registry.Success) // probe succeeds: → closed, 70 s after the trip
	tr.flush()
	g := h.collect(t)
	if d := cmp.Diff(map[string]float64{
		"dependency=billing-api,outcome=failed":    1,
		"dependency=billing-api,outcome=succeeded": 1,
	}, g[telemetry.MetricProbes]); d != "" {
		t.Errorf("probes (-want +got):\n%s", d)
	}
	if got := g[telemetry.MetricOpenDuration+".count"]["dependency=billing-api"]; got != 1 {
		t.Errorf("open duration count = %v, want 1", got)
	}
	if got := g[telemetry.MetricOpenDuration+".sum"]["dependency=billing-api"]; got != 70 {
		t.Errorf("open duration = %v s, want 70", got)
	}
}

func TestFailureRateGauge(t *testing.T) {
	h := newHarness(t)
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 100, MinCalls: 100}))
	defer h.in.Watch(reg)()
	b, err := reg.Get("search-api")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []registry.Outcome{registry.Success, registry.Failure, registry.Success, registry.Failure, registry.Excluded} {
		tk, _ := b.Admit()
		tk.Done(o)
	}
	g := h.collect(t)
	if got := g[telemetry.MetricFailureRate]["dependency=search-api"]; got != 0.5 {
		t.Errorf("failure rate = %v, want 0.5 (exclusions count neither way)", got)
	}
	if d := cmp.Diff(map[string]float64{
		"dependency=search-api,outcome=success":         2,
		"dependency=search-api,outcome=failure":         2,
		"dependency=search-api,outcome=excluded":        1,
		"dependency=search-api,outcome=short_circuited": 0,
	}, g[telemetry.MetricCalls]); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}
