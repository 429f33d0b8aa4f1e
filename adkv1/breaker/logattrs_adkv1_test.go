package breaker_test

import (
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// recordAttrs returns r's attributes as strings (otel/log v0.21, ADK v1.7.0's pin).
func recordAttrs(r *sdklog.Record) map[string]string {
	got := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool { got[string(kv.Key)] = kv.Value.String(); return true })
	return got
}
