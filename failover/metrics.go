package failover

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

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
	c, err := mp.Meter("github.com/adkbreaker/adkbreaker/failover").Int64Counter(MetricFailovers,
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
