package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/registry"
)

// An operator isolates a dependency: the transition is counted with its
// cause and the state gauge reports open (2).
func ExampleInstrumentation_Watch() {
	reader := sdkmetric.NewManualReader()
	in, err := telemetry.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), tracenoop.NewTracerProvider())
	if err != nil {
		panic(err)
	}
	reg := registry.MustNew()
	stop := in.Watch(reg)
	defer stop()

	_ = reg.Isolate("billing-api")
	_ = reg.Flush(context.Background()) // transitions are delivered asynchronously

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// adkbreaker.breaker.state{dependency=billing-api} 2
	// adkbreaker.calls{dependency=billing-api,outcome=excluded} 0
	// adkbreaker.calls{dependency=billing-api,outcome=failure} 0
	// adkbreaker.calls{dependency=billing-api,outcome=short_circuited} 0
	// adkbreaker.calls{dependency=billing-api,outcome=success} 0
	// adkbreaker.transitions.dropped{} 0
	// adkbreaker.transitions{cause=isolated,dependency=billing-api,from=closed,to=open} 1
}
