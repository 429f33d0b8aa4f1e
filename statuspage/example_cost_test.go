package statuspage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// A TurnCosts tallies what the agent's turns cost over the last hour. The
// plugin fills it (breaker.WithCostObserver(costs)); here two turns are
// reported by hand: one that met a short-circuit, one that met nothing.
func ExampleTurnCosts() {
	clk := registrytest.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk))
	costs := statuspage.NewTurnCosts(reg.Clock())
	costs.TurnCost(context.Background(), observe.TurnCostEvent{Tokens: 42000, ShortCircuit: true})
	costs.TurnCost(context.Background(), observe.TurnCostEvent{Tokens: 3000})
	page, err := statuspage.New(reg, statuspage.WithTurnCosts(costs))
	if err != nil {
		panic(err)
	}
	defer page.Close()
	c := page.Document().Cost
	fmt.Printf("last hour: %d tokens on %d of %d turns met an unavailable dependency\n", c.OutageTokens, c.OutageTurns, c.Turns)
	clk.Advance(time.Hour)
	fmt.Println("an hour later:", costs.LastHour().OutageTokens)
	// Output:
	// last hour: 42000 tokens on 1 of 2 turns met an unavailable dependency
	// an hour later: 0
}
