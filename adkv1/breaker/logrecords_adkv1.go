package breaker

import (
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
)

// setBody sets r's body and attributes. ADK v1.7.0 pins otel/log v0.21,
// whose records take attribute values directly.
func setBody(r *otellog.Record, body string, attrs []attribute.KeyValue) {
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(attrs...)
}
