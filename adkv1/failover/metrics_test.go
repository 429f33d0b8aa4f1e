package failover_test

import (
	"context"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestFailoverCounter(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	reg := registry.MustNew()
	m, err := failover.New("assistant", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "primary", err: genai.APIError{Code: 503, Status: "UNAVAILABLE"}}, Key: "model:primary"},
		{LLM: &endpointLLM{name: "fallback"}, Key: "model:fallback"},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)),
		failover.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for range 3 {
		for _, err := range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != failover.MetricFailovers {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				want := attribute.NewSet(attribute.String("model", "assistant"), attribute.String("from", "model:primary"),
					attribute.String("to", "model:fallback"), attribute.String("reason", "server_error"))
				if !dp.Attributes.Equals(&want) {
					t.Fatalf("attributes = %v", dp.Attributes.ToSlice())
				}
				got += dp.Value
			}
		}
	}
	if got != 3 {
		t.Fatalf("%s = %d, want 3", failover.MetricFailovers, got)
	}
	if _, err := failover.New("x", reg, []failover.Endpoint{{LLM: &endpointLLM{name: "p"}, Key: "model:p"}}, failover.WithMeterProvider(nil)); err == nil {
		t.Fatal("nil meter provider accepted")
	}
}
