package breaker_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/internal/gctest"
	"github.com/adkbreaker/adkbreaker/promexport"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestMetricsEndpointServesDocumentedNames wires the plugin to the exporter
// and scrapes /metrics: the state gauge and the transitions counter appear
// under the Prometheus names docs/telemetry.md lists.
func TestMetricsEndpointServesDocumentedNames(t *testing.T) {
	exp, err := promexport.New()
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	reg := registry.MustNew()
	h, err := breaker.NewHandler(breaker.WithRegistry(reg), breaker.WithMeterProvider(exp.MeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	// The gauges live as long as the handler (a runner holds it in a real
	// program); without this a GC before the scrape unregisters them.
	defer runtime.KeepAlive(h)
	b, err := reg.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	b.Trip(time.Minute, registry.CauseRetryHint)
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	gctest.Collect() // a collection must not take the gauges of a live handler

	srv := httptest.NewServer(exp.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"# TYPE adkbreaker_breaker_state gauge",
		"# TYPE adkbreaker_transitions_total counter",
		"# TYPE adkbreaker_breaker_retry_after_seconds gauge",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !hasSample(text, "adkbreaker_breaker_state", `dependency="billing"`, "2") {
		t.Errorf("no open state sample for billing in:\n%s", grep(text, "adkbreaker_breaker_state"))
	}
	if !hasSample(text, "adkbreaker_transitions_total", `cause="retry_hint"`, "1") {
		t.Errorf("no transition sample in:\n%s", grep(text, "adkbreaker_transitions_total"))
	}
}

func hasSample(text, name, label, value string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) && strings.HasSuffix(line, " "+value) {
			return true
		}
	}
	return false
}

func grep(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestNoEmptyScopeSchemaURL: no series on /metrics carries an empty
// otel_scope_schema_url label (adkbreaker's scope has no schema URL); the
// scope's name and version labels stay.
func TestNoEmptyScopeSchemaURL(t *testing.T) {
	exp, err := promexport.New()
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	reg := registry.MustNew()
	h, err := breaker.NewHandler(breaker.WithRegistry(reg), breaker.WithMeterProvider(exp.MeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.KeepAlive(h)
	b, err := reg.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	b.Trip(time.Minute, registry.CauseRetryHint)
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(exp.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if strings.Contains(text, "otel_scope_schema_url") {
		t.Errorf("/metrics carries otel_scope_schema_url:\n%s", grep(text, "adkbreaker_transitions_total"))
	}
	if !hasSample(text, "adkbreaker_transitions_total", `otel_scope_name="github.com/adkbreaker/adkbreaker"`, "1") {
		t.Errorf("the scope name label is gone:\n%s", grep(text, "adkbreaker_transitions_total"))
	}
}

// Serve adkbreaker's metrics on /metrics for a Prometheus server to scrape:
// the plugin records on the exporter's MeterProvider.
func ExampleWithMeterProvider_prometheus() {
	exp, err := promexport.New()
	if err != nil {
		log.Fatal(err)
	}
	p, err := breaker.New(
		breaker.WithDependency("billing-api", "get_invoice"),
		breaker.WithMeterProvider(exp.MeterProvider()),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = p // register p first in runner.PluginConfig.Plugins

	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	// go http.ListenAndServe("127.0.0.1:9464", mux)
	// Output:
}
