//go:build ignore

package breaker

import (
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
)

// setBody sets r's body and attributes. ADK v2.2.0 pins otel/log v0.20,
// whose records have their own value type: attributes are converted.
func setBody(r *otellog.Record, body string, attrs []attribute.KeyValue) {
	r.SetBody(otellog.StringValue(body))
	for _, kv := range attrs {
		r.AddAttributes(otellog.KeyValueFromAttribute(kv))
	}
}
