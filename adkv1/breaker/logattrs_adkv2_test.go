//go:build ignore

package breaker_test

import (
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// recordAttrs returns r's attributes as strings (otel/log v0.20, ADK v2.2.0's pin).
func recordAttrs(r *sdklog.Record) map[string]string {
	got := map[string]string{}
	r.WalkAttributes(func(kv log.KeyValue) bool { got[kv.Key] = kv.Value.String(); return true })
	return got
}
