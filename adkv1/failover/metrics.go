package failover

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of failover's meter: the same on
// both ADK lines (it names the package, not the adapter module).
const ScopeName = "github.com/adkbreaker/adkbreaker/failover"

// MetricFailovers is the counter of failover hops recorded with
// WithMeterProvider. Attributes: model (the chain's name), from and to
// (endpoint keys; to is empty when the chain had no further endpoint) and
// reason (a Reason). All values come from configuration or closed sets.
const MetricFailovers = "adkbreaker.model.failovers"

// WithMeterProvider counts every failover hop in MetricFailovers through mp
// (for example otel.GetMeterProvider()). Failovers are also logged
// (rate-limited) and put on ADK's generate_content span either way.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(s *settings) {
		if mp == nil {
			s.errs = append(s.errs, errors.New("meter provider: must not be nil"))
			return
		}
		s.meter = mp
	})
}

// newFailoverCounter creates the counter once, in New.
func newFailoverCounter(mp metric.MeterProvider) (metric.Int64Counter, error) {
	c, err := mp.Meter(ScopeName).Int64Counter(MetricFailovers,
		metric.WithUnit("{failover}"),
		metric.WithDescription("Model calls that left an endpoint for the next one in the chain, by reason."))
	if err != nil {
		return nil, fmt.Errorf("meter provider: %w", err)
	}
	return c, nil
}

// countFailover records one hop. Failovers are rare, so the attribute set is
// built per call.
func (m *Model) countFailover(ctx context.Context, ev Event) {
	if m.failovers == nil {
		return
	}
	m.failovers.Add(ctx, 1, metric.WithAttributes(
		attribute.String("model", m.name), attribute.String("from", string(ev.From)),
		attribute.String("to", string(ev.To)), attribute.String("reason", string(ev.Reason.closed())),
	))
}

// Throttle metrics, recorded with WithMeterProvider for endpoints with a
// Throttle. Attributes: model (the chain's name) and endpoint (its key).
const (
	// MetricThrottleRejections counts calls an endpoint's adaptive throttle
	// sent straight to the next endpoint.
	MetricThrottleRejections = "adkbreaker.throttle.rejections"
	// MetricThrottleRejectProbability is the probability that a call
	// arriving now is shed (Prometheus: ..._ratio).
	MetricThrottleRejectProbability = "adkbreaker.throttle.reject_probability"
)

// throttleInstruments registers the throttle counter and gauge when some
// endpoint has a Throttle. Every throttled endpoint's counter starts at 0,
// so a dashboard shows it before the first shed call.
func (m *Model) throttleInstruments(mp metric.MeterProvider) error {
	var thr []*endpoint
	for i := range m.eps {
		if m.eps[i].thr != nil {
			thr = append(thr, &m.eps[i])
		}
	}
	if len(thr) == 0 {
		return nil
	}
	meter := mp.Meter(ScopeName)
	c, err := meter.Int64Counter(MetricThrottleRejections, metric.WithUnit("{call}"),
		metric.WithDescription("Model calls an endpoint's adaptive throttle sent straight to the next endpoint, without calling it."))
	if err != nil {
		return err
	}
	g, err := meter.Float64ObservableGauge(MetricThrottleRejectProbability, metric.WithUnit("1"),
		metric.WithDescription("Probability that a model call arriving now is sent straight to the next endpoint by the endpoint's adaptive throttle."))
	if err != nil {
		return err
	}
	attrs := make([]metric.MeasurementOption, len(thr))
	for i, ep := range thr {
		attrs[i] = metric.WithAttributes(attribute.String("model", m.name), attribute.String("endpoint", string(ep.Key)))
		c.Add(context.Background(), 0, attrs[i])
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := m.clock.Now()
		for i, ep := range thr {
			o.ObserveFloat64(g, ep.thr.Probability(now), attrs[i])
		}
		return nil
	}, g)
	if err != nil {
		return err
	}
	m.throttleShed, m.throttleReg = c, reg
	return nil
}

// countShed records one shed call.
func (m *Model) countShed(ctx context.Context, ep *endpoint) {
	if m.throttleShed == nil {
		return
	}
	m.throttleShed.Add(ctx, 1, metric.WithAttributes(attribute.String("model", m.name), attribute.String("endpoint", string(ep.Key))))
}
