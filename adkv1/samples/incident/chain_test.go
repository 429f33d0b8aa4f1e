//go:build !race

package main

import (
	"testing"

	"github.com/adkbreaker/adkbreaker/internal/incident"
)

// TestChainTargets replays the chain scenario in both modes and checks its
// targets: adkbreaker, registered on the root runner only, sends at most 19
// (fast) / 18 (hang) calls to the dead dependency behind the sub-agent, makes
// at most 6 model calls per outage turn (root and sub-agent) against about
// 25 without a breaker, and recovers within 60 s.
func TestChainTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 15 simulated minutes twice")
	}
	for _, mode := range []string{"hang", "fast"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			results, err := runChainAll(mode)
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]incident.Row{}
			for _, r := range results {
				by[r.Variant] = incident.Summarise(r)
			}
			none, a := by["none"], by["adkbreaker"]
			t.Logf("%s: none=%d (%.2f LLM calls per turn) adkbreaker=%d (%.2f, recovery %s)", mode,
				none.DeadCalls, none.LLMPerTurnMean, a.DeadCalls, a.LLMPerTurnMean, a.RecoveryString())
			for _, miss := range incident.ChainMissed(mode, a) {
				t.Error(miss)
			}
			if none.LLMPerTurnMean < 20 {
				t.Errorf("without a breaker: %.2f LLM calls per outage turn, want about 25 (the scenario lost its retries)", none.LLMPerTurnMean)
			}
		})
	}
}
