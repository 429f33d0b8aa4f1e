package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/adkbreaker/adkbreaker/observe"
)

// Metric names of the outage cost (docs/telemetry.md).
const (
	// MetricTurnTokens is a histogram of the tokens each root turn's model
	// responses reported, sub-agents included.
	MetricTurnTokens = "adkbreaker.turn.tokens"
	// MetricOutageTokens counts the tokens spent in turns that met a
	// short-circuit, a failover or a stall, by AttrMet.
	MetricOutageTokens = "adkbreaker.outage.tokens"
	// AttrMet is what a turn met: observe.MetShortCircuit, MetStall or
	// MetFailover (one per turn; see observe.TurnCostEvent.Met).
	AttrMet = "met"
)

// costInstruments holds the outage-cost instruments and their attribute
// sets (three values, made once).
type costInstruments struct {
	turnTokens   metric.Int64Histogram
	outageTokens metric.Int64Counter
	metSets      map[string][]metric.AddOption
}

func (in *Instrumentation) initCost(m metric.Meter, add func(string, error)) {
	var err error
	in.cost.turnTokens, err = m.Int64Histogram(MetricTurnTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens reported by the model responses of each root agent turn (sub-agents reached through agent tools included), recorded when the turn's run ends."),
		metric.WithExplicitBucketBoundaries(1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1e6, 2.5e6))
	add(MetricTurnTokens, err)
	in.cost.outageTokens, err = m.Int64Counter(MetricOutageTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens spent in root agent turns that met an unavailable dependency: a short-circuit (or no model endpoint), a stall, or a model failover (attribute met, one per turn)."))
	add(MetricOutageTokens, err)
	in.cost.metSets = map[string][]metric.AddOption{}
	for _, v := range []string{observe.MetShortCircuit, observe.MetStall, observe.MetFailover} {
		in.cost.metSets[v] = addOpts(attribute.String(AttrMet, v))
	}
}

// TurnCost records a root turn's tokens, and adds them to the outage cost
// when the turn met a short-circuit, a failover or a stall.
func (in *Instrumentation) TurnCost(ctx context.Context, ev observe.TurnCostEvent) {
	if in == nil || in.cost.turnTokens == nil {
		return
	}
	defer handlePanic()
	in.cost.turnTokens.Record(ctx, ev.Tokens)
	if opts, ok := in.cost.metSets[ev.Met()]; ok && ev.Tokens > 0 {
		in.cost.outageTokens.Add(ctx, ev.Tokens, opts...)
	}
}
