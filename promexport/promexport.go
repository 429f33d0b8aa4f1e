// Package promexport exposes adkbreaker's OpenTelemetry metrics as a
// Prometheus /metrics endpoint, for users who run no OpenTelemetry
// Collector. ADK's launchers install no meter provider; this is the one
// line that gives a Prometheus server something to scrape:
//
//	exp, err := promexport.New()
//	if err != nil { ... }
//	p, err := breaker.New(breaker.WithMeterProvider(exp.MeterProvider()))
//	mux.Handle("/metrics", exp.Handler())
//
// It uses the OpenTelemetry Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus) with its own Prometheus
// registry, so it never collides with a process-wide default registry, and
// the names it produces are those listed in docs/telemetry.md: dots become
// underscores, counters end in _total, units become suffixes
// (adkbreaker.transitions → adkbreaker_transitions_total).
package promexport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Exporter holds a MeterProvider and the Prometheus registry it feeds.
type Exporter struct {
	reg *prometheus.Registry
	mp  *sdkmetric.MeterProvider
	h   http.Handler
}

// Option configures an Exporter.
type Option func(*config)

type config struct {
	runtime  bool
	exporter []otelprom.Option
	provider []sdkmetric.Option
	inFlight int
	timeout  time.Duration
}

// Defaults of the endpoint's own limits.
const (
	// DefaultMaxRequestsInFlight is how many scrapes are served at once;
	// more are answered 503 at once. Prometheus servers scrape a target one
	// request at a time; a handful covers an HA pair and a person with curl.
	DefaultMaxRequestsInFlight = 4
	// DefaultScrapeTimeout is how long one scrape may take before it is
	// answered 503 (Prometheus's own scrape timeout defaults to 10s).
	DefaultScrapeTimeout = 10 * time.Second
)

// WithMaxRequestsInFlight limits the scrapes served at once (n ≥ 1); the
// next one is answered 503 Service Unavailable without gathering. If not
// given, DefaultMaxRequestsInFlight. The endpoint is often reachable by
// more than Prometheus: the limit keeps a burst of requests from making
// the agent's process gather metrics in parallel without bound.
func WithMaxRequestsInFlight(n int) Option { return func(c *config) { c.inFlight = n } }

// WithScrapeTimeout bounds one scrape (d > 0): past it the request is
// answered 503. If not given, DefaultScrapeTimeout.
func WithScrapeTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithGoRuntime adds the Go runtime and process collectors
// (go_goroutines, process_cpu_seconds_total, ...) to the endpoint.
func WithGoRuntime() Option { return func(c *config) { c.runtime = true } }

// WithExporterOptions passes options to the OpenTelemetry Prometheus
// exporter (for example otelprom.WithoutScopeInfo()). WithRegisterer is set
// by promexport and must not be passed.
func WithExporterOptions(opts ...otelprom.Option) Option {
	return func(c *config) { c.exporter = append(c.exporter, opts...) }
}

// WithProviderOptions passes options to the MeterProvider (for example a
// resource or views).
func WithProviderOptions(opts ...sdkmetric.Option) Option {
	return func(c *config) { c.provider = append(c.provider, opts...) }
}

// New builds an Exporter. Invalid options are reported together.
func New(opts ...Option) (*Exporter, error) {
	c := config{inFlight: DefaultMaxRequestsInFlight, timeout: DefaultScrapeTimeout}
	for _, o := range opts {
		o(&c)
	}
	var bad []error
	if c.inFlight < 1 {
		bad = append(bad, fmt.Errorf("promexport: max requests in flight must be at least 1, got %d", c.inFlight))
	}
	if c.timeout <= 0 {
		bad = append(bad, fmt.Errorf("promexport: scrape timeout must be positive, got %v", c.timeout))
	}
	if err := errors.Join(bad...); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if c.runtime {
		if err := errors.Join(
			reg.Register(collectors.NewGoCollector()),
			reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		); err != nil {
			return nil, err
		}
	}
	exp, err := otelprom.New(append(c.exporter, otelprom.WithRegisterer(reg))...)
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(append(c.provider, sdkmetric.WithReader(exp))...)
	return &Exporter{
		reg: reg,
		mp:  mp,
		h: promhttp.HandlerFor(withoutEmptySchemaURL{reg}, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: c.inFlight, Timeout: c.timeout,
		}),
	}, nil
}

// MeterProvider is what to pass to breaker.WithMeterProvider,
// failover.WithMeterProvider and mcpguard's meter option.
func (e *Exporter) MeterProvider() metric.MeterProvider { return e.mp }

// Handler serves the metrics in the Prometheus exposition format.
func (e *Exporter) Handler() http.Handler { return e.h }

// Registry is the Prometheus registry behind Handler, for adding collectors.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Shutdown stops the MeterProvider.
func (e *Exporter) Shutdown(ctx context.Context) error { return e.mp.Shutdown(ctx) }

// scopeSchemaLabel is the label the OpenTelemetry exporter puts on every
// series for its instrumentation scope's schema URL. adkbreaker's scopes
// (and most others) have none, and the exporter has no option to leave an
// empty one out short of WithoutScopeInfo, which drops otel_scope_name and
// otel_scope_version too.
const scopeSchemaLabel = "otel_scope_schema_url"

// withoutEmptySchemaURL is the registry as Handler serves it: an empty
// otel_scope_schema_url label is dropped from every series (to Prometheus
// an empty label is no label, so no query changes); a scope with a schema
// URL keeps it.
type withoutEmptySchemaURL struct{ g prometheus.Gatherer }

func (w withoutEmptySchemaURL) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.g.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			m.Label = slices.DeleteFunc(m.Label, func(l *dto.LabelPair) bool {
				return l.GetName() == scopeSchemaLabel && l.GetValue() == ""
			})
		}
	}
	return mfs, err
}
