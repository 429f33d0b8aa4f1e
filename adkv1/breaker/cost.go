package breaker

import (
	"context"
	"errors"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/observe"
)

// WithCostObserver sends what every root turn cost in tokens
// (observe.TurnCostEvent: the tokens its model responses reported,
// sub-agents included, and whether it met a short-circuit, a failover or a
// stall) to o, when the turn's run ends. The status page's tally
// (statuspage.TurnCosts) is one; WithTelemetry records the same events as
// metrics. Several may be given.
func WithCostObserver(o observe.CostObserver) Option {
	return optionFunc(func(s *settings) {
		if o == nil {
			s.errs = append(s.errs, errors.New("cost observer: must not be nil"))
			return
		}
		s.costs = append(s.costs, o)
	})
}

// attachCosts adds the cost observers to cb's Observer.
func (s *settings) attachCosts(cb *callbacks.Config) {
	for _, o := range s.costs {
		cb.Observer = fanOut(cb.Observer, costOnly{o})
	}
}

// costOnly makes a CostObserver an Observer.
type costOnly struct{ observe.CostObserver }

func (costOnly) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) {}
func (costOnly) TurnEnded(context.Context, callbacks.TurnEndEvent)         {}

// TurnCost forwards to the observers that want turn costs.
func (o observers) TurnCost(ctx context.Context, ev callbacks.TurnCostEvent) {
	for _, x := range o {
		if c, ok := x.(callbacks.CostObserver); ok {
			c.TurnCost(ctx, ev)
		}
	}
}

// WantsTurnCost reports whether any of the observers wants turn costs, so
// that the handler counts tokens only then.
func (o observers) WantsTurnCost() bool {
	for _, x := range o {
		if _, ok := x.(callbacks.CostObserver); !ok {
			continue
		}
		if g, ok := x.(interface{ WantsTurnCost() bool }); ok && !g.WantsTurnCost() {
			continue
		}
		return true
	}
	return false
}
