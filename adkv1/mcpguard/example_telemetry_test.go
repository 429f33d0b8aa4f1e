package mcpguard_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Every reach for a server is a span mcp.<server>.<operation>; a handshake
// is a child span.
func ExampleWithTracerProvider() {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{{Name: "files", Dial: fs.Dial}},
		mcpguard.WithTracerProvider(tp))
	defer g.Close()
	_ = g.Start(context.Background())

	for _, s := range rec.Ended() {
		a := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value.String()
		}
		fmt.Println(strings.TrimSpace(fmt.Sprintln(s.Name(), a[mcpguard.AttrServer], a[mcpguard.AttrOperation], a[mcpguard.AttrOutcome], a[mcpguard.AttrBreaker])))
	}
	// Output:
	// mcp.files.connect files connect ok
	// mcp.files.list_tools files list_tools ok closed
}

// Outcomes, retries and leg latency are counted by server, operation and
// class.
func ExampleWithMeterProvider() {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	reader := sdkmetric.NewManualReader()

	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{{Name: "files", Dial: fs.Dial}},
		mcpguard.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	defer g.Close()
	_ = g.Start(context.Background())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s{%s} count=%d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// adkbreaker.mcp.leg.duration{class=ok,operation=connect,server=files} count=1
	// adkbreaker.mcp.leg.duration{class=ok,operation=list_tools,server=files} count=1
	// adkbreaker.mcp.operations{class=ok,operation=list_tools,server=files} 1
}

// MCP servers declared in the configuration file, with their credentials
// read from the environment.
func ExampleFromConfig() {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	url := fs.StartHTTP() // a streamable HTTP server on 127.0.0.1
	os.Setenv("FILES_MCP_TOKEN", "Bearer example-token")
	defer os.Unsetenv("FILES_MCP_TOKEN")

	f, err := config.Parse([]byte(`version: 1
mcp_servers:
  files:
    url: `+url+`
    header_env: {Authorization: FILES_MCP_TOKEN}
    required: true
    call_timeout: 10s
    idempotent_tools: [echo, lookup]
    policy: {consecutive_failures: 3}
`), config.YAML)
	if err != nil {
		panic(err)
	}
	reg := registry.MustNew(f.RegistryOptions()...)
	g, err := mcpguard.FromConfig(reg, f)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	if err := g.Start(context.Background()); err != nil {
		panic(err)
	}
	h := g.Health()[0]
	fmt.Println(h.Server, h.Required, h.Outcome, h.Tools, reg.PolicyFor("files").ConsecutiveFailures)
	// Output: files true ok 5 3
}
