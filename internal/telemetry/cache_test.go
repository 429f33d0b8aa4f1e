package telemetry

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestAttributeSetCacheIsBounded: past the cap, new combinations are counted
// under the overflow set instead of adding series.
func TestAttributeSetCacheIsBounded(t *testing.T) {
	r := sdkmetric.NewManualReader()
	in, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)), tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	in.sc = newCache[scKey, []metric.AddOption](4)
	for i := range 10 {
		in.ShortCircuit(context.Background(), observe.ShortCircuitEvent{
			Dependency: "dep", Tool: fmt.Sprintf("tool_%d", i), Reason: degrade.ReasonCircuitOpen, Terminal: i%2 == 1,
		})
	}
	if n := in.sc.len(); n != 4 {
		t.Fatalf("cache size = %d, want the cap 4", n)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != MetricShortCircuits {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			got[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
		}
	}
	if len(got) != 6 {
		t.Fatalf("series = %d, want 4 cached + 2 overflow: %v", len(got), got)
	}
	if got["dependency=_other,mode=enforce,reason=_other,terminal=false,tool=_other"] != 3 || got["dependency=_other,mode=enforce,reason=_other,terminal=true,tool=_other"] != 3 {
		t.Fatalf("overflow series = %v", got)
	}
}

type sliceProvider struct {
	metricnoop.MeterProvider
	_ []int
}

// A provider that cannot be a map key is watched without sharing, not a panic.
func TestWatchWithUncomparableProvider(t *testing.T) {
	if isComparable(metricWatch{mp: sliceProvider{}}) {
		t.Fatal("sliceProvider reported comparable")
	}
	in, err := New(sliceProvider{}, tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.MustNew()
	stop := in.Watch(reg)
	_ = reg.Isolate("x")
	stop()
	stop()
}

// len is how many attribute sets c holds (tests only).
func (c *cache[K, V]) len() int { return len(*c.m.Load()) }
