package mcpguard_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// collect reads every data point of the guard's instruments, keyed
// "name{attributes}": counter values, and histogram counts.
func collect(t *testing.T, r *sdkmetric.ManualReader) (map[string]int64, map[string]metricdata.HistogramDataPoint[float64]) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	hists := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != mcpguard.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, mcpguard.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					counts[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					k := m.Name + "{" + p.Attributes.Encoded(attribute.DefaultEncoder()) + "}"
					hists[k] = p
					counts[k] = int64(p.Count)
				}
			}
		}
	}
	return counts, hists
}

// TestMetricsFromRunnerTurns: turns through the real runner count each
// operation's outcome by server, operation and class, each retry, and each
// leg's latency.
func TestMetricsFromRunnerTurns(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Flapping, RecoverAfter: 1})
	defer fs.Close()
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "notes", Dial: fs.Dial, IdempotentTools: []string{"echo"}}},
		mcpguard.WithRand(func() float64 { return 0 }),
		mcpguard.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	defer g.Close()

	ctx := t.Context()
	runTurn(t, ctx, reg, g, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}) // dropped, retried: ok
	fs.SetMode(mcpfault.Malformed)
	runTurn(t, ctx, reg, g, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}) // protocol
	fs.SetMode(mcpfault.None)
	runTurn(t, ctx, reg, g, &scriptedLLM{Call: "refuse", Args: map[string]any{}}) // isError: refused

	counts, hists := collect(t, reader)
	op := func(name, operation, class string) string {
		return fmt.Sprintf("%s{class=%s,operation=%s,server=notes}", name, class, operation)
	}
	// The go-sdk server announces its tools with a delayed
	// notifications/tools/list_changed, which may reach the first session
	// after its discovery and make the next turn discover again.
	lists := counts[op(mcpguard.MetricOperations, "list_tools", "ok")]
	if lists < 1 || lists > 2 {
		t.Errorf("%d discoveries, want 1 (2 if tools/list_changed arrived late)", lists)
	}
	want := map[string]int64{
		op(mcpguard.MetricOperations, "list_tools", "ok"):       lists,
		op(mcpguard.MetricOperations, "call_tool", "ok"):        1,
		op(mcpguard.MetricOperations, "call_tool", "protocol"):  1,
		op(mcpguard.MetricOperations, "call_tool", "refused"):   1,
		op(mcpguard.MetricRetries, "call_tool", "fault"):        1,
		op(mcpguard.MetricLegDuration, "connect", "ok"):         2, // discovery's dial, the call's reconnect
		op(mcpguard.MetricLegDuration, "list_tools", "ok"):      lists,
		op(mcpguard.MetricLegDuration, "call_tool", "fault"):    1,
		op(mcpguard.MetricLegDuration, "call_tool", "ok"):       1,
		op(mcpguard.MetricLegDuration, "call_tool", "protocol"): 1,
		op(mcpguard.MetricLegDuration, "call_tool", "refused"):  1,
	}
	for k, w := range want {
		if counts[k] != w {
			t.Errorf("%s = %d, want %d", k, counts[k], w)
		}
	}
	for k := range counts {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s = %d", k, counts[k])
		}
	}
	h := hists[op(mcpguard.MetricLegDuration, "call_tool", "ok")]
	if h.Sum <= 0 || h.Sum > 10 {
		t.Errorf("call leg latency sum = %v s", h.Sum)
	}
	if !slices.Equal(h.Bounds, []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}) {
		t.Errorf("bucket bounds = %v", h.Bounds)
	}
}
