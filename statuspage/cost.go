package statuspage

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Cost is what the agent's turns cost in tokens over the last hour, in the
// status document (WithTurnCosts) and on the page ("tokens spent on turns
// that met an unavailable dependency, last hour").
type Cost struct {
	// WindowSeconds is the span the figures cover (3600).
	WindowSeconds float64 `json:"window_seconds"`
	// OutageTokens is the tokens spent in turns that met a short-circuit,
	// a stall or a model failover (observe.TurnCostEvent.Met), and
	// OutageTurns how many such turns there were.
	OutageTokens int64 `json:"outage_tokens"`
	OutageTurns  int64 `json:"outage_turns"`
	// Tokens and Turns count every root turn.
	Tokens int64 `json:"tokens"`
	Turns  int64 `json:"turns"`
}

// costWindow is the span of TurnCosts, in costBucket-sized steps.
const (
	costWindow  = time.Hour
	costBuckets = 60
	costStep    = costWindow / costBuckets
)

type costBucket struct {
	step                              int64 // the bucket's step since the epoch; its counts are stale if old
	outageTokens, outageTurns, tokens int64
	turns                             int64
}

// TurnCosts tallies the cost of the agent's turns over the last hour, in
// one-minute steps, from the plugin's turn-cost events: give it to the
// plugin (breaker.WithCostObserver) and to the page (WithTurnCosts). The
// figures are the same numbers the adkbreaker.turn.tokens and
// adkbreaker.outage.tokens metrics count. Safe for concurrent use; the zero
// value is not: use NewTurnCosts.
type TurnCosts struct {
	clock   registry.Clock
	mu      sync.Mutex
	buckets [costBuckets]costBucket
}

// NewTurnCosts returns an empty tally on clock (the registry's, so that
// tests with a fake clock see the window move; nil: the system clock).
func NewTurnCosts(clock registry.Clock) *TurnCosts {
	if clock == nil {
		clock = registry.SystemClock()
	}
	return &TurnCosts{clock: clock}
}

// TurnCost counts one turn (observe.CostObserver).
func (c *TurnCosts) TurnCost(_ context.Context, ev observe.TurnCostEvent) {
	step := c.clock.Now().UnixNano() / int64(costStep)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := &c.buckets[uint64(step)%costBuckets]
	if b.step != step {
		*b = costBucket{step: step}
	}
	b.turns++
	b.tokens += max(ev.Tokens, 0)
	if ev.Met() != "" {
		b.outageTurns++
		b.outageTokens += max(ev.Tokens, 0)
	}
}

// LastHour sums the turns of the last hour (the current minute and the 59
// before it).
func (c *TurnCosts) LastHour() Cost {
	now := c.clock.Now().UnixNano() / int64(costStep)
	out := Cost{WindowSeconds: costWindow.Seconds()}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.buckets {
		if b.step > now-costBuckets && b.step <= now {
			out.OutageTokens += b.outageTokens
			out.OutageTurns += b.outageTurns
			out.Tokens += b.tokens
			out.Turns += b.turns
		}
	}
	return out
}

// WithTurnCosts shows what turns cost in tokens over the last hour: the
// document's cost member and the page's figure "tokens spent on turns that
// met an unavailable dependency, last hour", read on every render. c must
// be the TurnCosts the plugin feeds (breaker.WithCostObserver(c)).
func WithTurnCosts(c *TurnCosts) Option {
	return func(o *options) {
		if c == nil {
			o.costErr = errors.New("statuspage: WithTurnCosts: nil tally")
			return
		}
		o.costs, o.costErr = c, nil
	}
}

// costSection is the document's cost member, or nil without WithTurnCosts.
func (h *Handler) costSection() *Cost {
	if h.o.costs == nil {
		return nil
	}
	c := h.o.costs.LastHour()
	return &c
}
