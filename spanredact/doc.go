// Package spanredact redacts the payloads ADK writes on its spans before
// they leave the process.
//
// ADK Go (v1.7.0 and v2.2.0) records a tool call's arguments
// (gcp.vertex.agent.tool_call_args) and its response — an MCP server's
// output included — (gcp.vertex.agent.tool_response) on its "execute_tool"
// spans verbatim, and a failed tool's or model call's error text as the
// span status and an "exception" event. Whatever a user, a model or a
// server put there (credentials, personal data, injected instructions)
// reaches the trace backend unless something removes it.
//
// A Redactor rewrites those attributes on ended spans, per key: Redact
// (the payload sanitiser, package redact, applied leaf by leaf to JSON,
// which is read as a stream only as far as the limit, and to JSON embedded
// in its strings),
// Hash (a short SHA-256 or HMAC-SHA-256 digest, for correlation) or Drop.
// Defaults returns the keys covered by default and their modes. Install it
// as an exporter wrapper (Redactor.Exporter) or, when the pipeline is built
// from processors, as a processor wrapper (Redactor.Processor):
//
//	red, err := spanredact.New(spanredact.WithMode(spanredact.KeyToolResponse, spanredact.Hash))
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(red.Exporter(otlpExporter)))
//	otel.SetTracerProvider(tp) // ADK uses the global provider
//
// The SDK does not let a processor change an ended span, and ADK sets the
// tool response just before ending it, so redaction happens on the
// read-only snapshot handed to the exporter: the span itself, and other
// processors of the same provider, still see the raw values.
//
// Redaction is best effort in Redact mode: the sanitiser removes what looks
// like a secret (tokens, keys, credentials in URLs, private addresses,
// members named like credentials). Use Hash or Drop for keys whose values
// must never be exported. Model request and response content is written by
// ADK Go v1.7.0 and v2.2.0 to OpenTelemetry log records (gen_ai.* events, elided unless
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), not to spans;
// this package does not cover logs.
package spanredact
