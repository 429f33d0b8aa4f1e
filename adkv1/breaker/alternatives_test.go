package breaker_test

import (
	"testing"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
)

// TestAlternativeNotAmongToolsWarnsOnce: on the real runner, a configured
// alternative the agent does not have is logged once, at the first model
// request declaring a tool of its dependency, naming the dependency, the
// alternative and the agent; an alternative the agent has is not; the
// refusals still offer both (the payload is the dependency's).
func TestAlternativeNotAmongToolsWarnsOnce(t *testing.T) {
	var logs logCapture
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithLogger(logs.logger()),
		breaker.WithDependencyOptions("billing-api", callbacks.Dependency{Alternatives: []string{"search_cached_invoices", "list_invoices"}}))
	e.backend.SetMode(fakebackend.Down)
	var offered []any
	for range 5 {
		for _, fr := range functionResponses(e.mustTurn("invoice 42?")) {
			if alts, ok := fr.Response["alternatives"].([]any); ok {
				offered = alts
			}
		}
	}
	const msg = "adkbreaker: an alternative configured for a dependency is not among the agent's tools; refusals offer it to the model anyway, which cannot call it"
	lines := logs.lines(t, msg)
	if len(lines) != 1 {
		t.Fatalf("%d warnings over 10 model requests, want 1: %v", len(lines), lines)
	}
	wantLine(t, lines[0], "WARN", map[string]any{"dependency": "billing-api", "alternative": "search_cached_invoices", "agent": "billing_agent"})
	if len(offered) != 2 {
		t.Errorf("refusals offered %v, want both alternatives (the payload is the dependency's)", offered)
	}
}
