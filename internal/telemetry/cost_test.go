package telemetry_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/observe"
)

// TestTurnCost: every root turn's tokens go to the histogram; those of
// turns that met a short-circuit, a stall or a failover to the outage
// counter, once per turn, under the one value of met the turn gets.
func TestTurnCost(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	for _, ev := range []observe.TurnCostEvent{
		{Tokens: 1200},
		{Tokens: 3000, ShortCircuit: true, Failover: true}, // short_circuit wins
		{Tokens: 800, Stall: true, Failover: true},         // a stall that failed over
		{Tokens: 500, Failover: true},
		{Tokens: 0, ShortCircuit: true}, // counted as a turn, adds nothing
	} {
		h.in.TurnCost(ctx, ev)
	}
	g := h.collect(t)
	if got := g[telemetry.MetricTurnTokens+".count"][""]; got != 5 {
		t.Errorf("turn tokens count = %v, want 5", got)
	}
	if got := g[telemetry.MetricTurnTokens+".sum"][""]; got != 5500 {
		t.Errorf("turn tokens sum = %v, want 5500", got)
	}
	if d := cmp.Diff(map[string]float64{"met=short_circuit": 3000, "met=stall": 800, "met=failover": 500}, g[telemetry.MetricOutageTokens]); d != "" {
		t.Errorf("outage tokens (-want +got):\n%s", d)
	}
	var nilIn *telemetry.Instrumentation
	nilIn.TurnCost(ctx, observe.TurnCostEvent{Tokens: 1}) // no panic
}
