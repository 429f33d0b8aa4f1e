package statuspage_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// TestTurnCostsLastHour: the tally counts every turn and, apart, the turns
// that met an unavailable dependency, over the last hour on the registry's
// clock: a turn an hour old drops out. The document and the page show it
// with WithTurnCosts, and not without.
func TestTurnCostsLastHour(t *testing.T) {
	reg, clk := newRegistry(t)
	costs := statuspage.NewTurnCosts(reg.Clock())
	ctx := t.Context()
	costs.TurnCost(ctx, observe.TurnCostEvent{Tokens: 9000, ShortCircuit: true})
	clk.Advance(30 * time.Minute)
	costs.TurnCost(ctx, observe.TurnCostEvent{Tokens: 1200})
	costs.TurnCost(ctx, observe.TurnCostEvent{Tokens: 800, Stall: true, Failover: true})
	costs.TurnCost(ctx, observe.TurnCostEvent{Tokens: 500, Failover: true})
	want := statuspage.Cost{WindowSeconds: 3600, OutageTokens: 10300, OutageTurns: 3, Tokens: 11500, Turns: 4}
	if got := costs.LastHour(); got != want {
		t.Fatalf("LastHour = %+v, want %+v", got, want)
	}
	_, srv := newPage(t, reg, statuspage.WithTurnCosts(costs))
	clk.Advance(31 * time.Minute) // the first turn is now 61 minutes old
	_, body := get(t, srv.URL+"/breakers/status.json")
	var doc statuspage.Document
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	want = statuspage.Cost{WindowSeconds: 3600, OutageTokens: 1300, OutageTurns: 2, Tokens: 2500, Turns: 3}
	if doc.Cost == nil || *doc.Cost != want {
		t.Fatalf("document cost = %+v, want %+v", doc.Cost, want)
	}
	_, page := get(t, srv.URL+"/breakers/")
	if !strings.Contains(page, `Tokens spent on turns that met an unavailable dependency, last hour: <strong id="cost-outage">1300</strong>`) {
		t.Fatalf("page does not show the figure:\n%s", page)
	}
	_, plain := newPage(t, reg)
	if _, body := get(t, plain.URL+"/breakers/status.json"); strings.Contains(body, `"cost"`) {
		t.Fatalf("a page without WithTurnCosts has a cost member: %s", body)
	}
	if _, err := statuspage.New(reg, statuspage.WithTurnCosts(nil)); err == nil || !strings.Contains(err.Error(), "WithTurnCosts") {
		t.Fatalf("WithTurnCosts(nil): %v", err)
	}
}
