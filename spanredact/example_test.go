package spanredact_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkbreaker/adkbreaker/spanredact"
)

// Wrap the exporter: tool arguments are sanitised, tool responses hashed.
func ExampleRedactor_Exporter() {
	red, err := spanredact.New(
		spanredact.WithMode(spanredact.KeyToolResponse, spanredact.Hash),
		spanredact.WithHashKey([]byte("a key from your secret store")),
	)
	if err != nil {
		panic(err)
	}
	exp := tracetest.NewInMemoryExporter() // your OTLP exporter
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(red.Exporter(exp)))
	// otel.SetTracerProvider(tp): ADK uses the global provider.

	_, span := tp.Tracer("adk").Start(context.Background(), "execute_tool lookup")
	span.SetAttributes(
		attribute.String(spanredact.KeyToolCallArgs, `{"query":"acme","api_key":"k-123","url":"https://u:p@crm.internal/x"}`),
		attribute.String(spanredact.KeyToolResponse, `{"email":"jane@example.com"}`),
	)
	span.End()

	for _, kv := range exp.GetSpans()[0].Attributes {
		fmt.Printf("%s = %s\n", kv.Key, kv.Value.String())
	}
	// Output:
	// gcp.vertex.agent.tool_call_args = {"query":"acme","api_key":"[redacted]","url":"[redacted]"}
	// gcp.vertex.agent.tool_response = hmac-sha256:985c3b8278e0161b
}
