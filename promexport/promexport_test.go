package promexport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adkbreaker/adkbreaker/internal/gctest"
	breaker "github.com/adkbreaker/adkbreaker/plugin"
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

// blockingCollector blocks every Collect until release is closed.
type blockingCollector struct {
	entered chan struct{}
	release chan struct{}
}

var blockingDesc = prometheus.NewDesc("blocking", "test", nil, nil)

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- blockingDesc }

func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	c.entered <- struct{}{}
	<-c.release
	ch <- prometheus.MustNewConstMetric(blockingDesc, prometheus.GaugeValue, 1)
}

// TestScrapesInFlightAreLimited: past the limit a scrape is answered 503 at
// once instead of gathering in parallel without bound.
func TestScrapesInFlightAreLimited(t *testing.T) {
	exp, err := promexport.New(promexport.WithMaxRequestsInFlight(1))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	bc := &blockingCollector{entered: make(chan struct{}, 1), release: make(chan struct{})}
	exp.Registry().MustRegister(bc)
	srv := httptest.NewServer(exp.Handler())
	defer srv.Close()
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-bc.entered // the first scrape is gathering
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second scrape while one is in flight = %d, want 503", resp.StatusCode)
	}
	close(bc.release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("first scrape = %d, want 200", code)
	}
}

// TestInvalidOptionsListedTogether: every invalid option is reported.
func TestInvalidOptionsListedTogether(t *testing.T) {
	_, err := promexport.New(promexport.WithMaxRequestsInFlight(0), promexport.WithScrapeTimeout(-time.Second))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"max requests in flight", "scrape timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
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
