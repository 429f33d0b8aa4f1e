package incident

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The chain scenario: the same incident one hop down. The root agent
// ("assistant") has one tool, an ADK agent tool for the sub-agent
// "researcher", whose tool enrich calls the enrichment API. The plugin is
// registered on the root runner only, as users register it, with no turn
// budget. A turn every 500 ms.
const (
	ChainTurnEvery = 500 * time.Millisecond
	RootRetries    = 3 // the root model re-invokes a failed researcher up to this many times per turn
)

// Targets of the chain scenario.
const (
	chainMaxDeadCallsFast = 19 // the arithmetic floor of the incident's settings (see docs/incident.md)
	chainMaxDeadCallsHang = 18
	chainMaxLLMPerTurn    = 6.0 // root and sub-agent, mean over the outage's turns
)

func LastOf(rs []map[string]any) map[string]any {
	if len(rs) == 0 {
		return nil
	}
	return rs[len(rs)-1]
}

func ReportChain(out io.Writer, mode string, results []*Result) {
	fmt.Fprintf(out, "incident: scenario=chain, mode=%s — %s simulated, a turn every %s; root agent → agent tool → researcher → enrich; %s down from minute %d to minute %d (%s); the plugin on the root runner only, no turn budget\n\n",
		mode, Simulated, ChainTurnEvery, Dependency, int(OutageFrom.Minutes()), int(OutageTo.Minutes()), modeWords(mode))
	fmt.Fprintln(out, "| variant | calls to the dead dependency | LLM calls during the outage | LLM calls per turn mean / max | turn duration mean / p99 / max | answers useful / degraded / error | probes | recovery | peak concurrent calls |")
	fmt.Fprintln(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	by := map[string]Row{}
	for _, r := range results {
		w := Summarise(r)
		by[w.Variant] = w
		fmt.Fprintf(out, "| %s | %d | %d | %.2f / %d | %s / %s / %s | %d / %d / %d | %d | %s | %d |\n",
			w.Variant, w.DeadCalls, w.LLMOutage, w.LLMPerTurnMean, w.llmPerTurnMax,
			roundDur(w.durMean), roundDur(w.durP99), roundDur(w.durMax), w.useful, w.degraded, w.fail, w.probes, w.RecoveryString(), w.Peak)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "LLM calls count the root's and the researcher's. Per-turn columns are over the turns that started during")
	fmt.Fprintln(out, "the outage; answers over all turns; recovery is from the dependency's return to the first call that succeeded.")
	fmt.Fprintln(out)
	if miss := ChainMissed(mode, by["adkbreaker"]); len(miss) > 0 {
		fmt.Fprintf(out, "targets: MISSED: %s\n", strings.Join(miss, "; "))
	} else {
		fmt.Fprintf(out, "targets: met (adkbreaker ≤ %d dead calls, ≤ %.0f LLM calls per turn, recovery ≤ 60 s)\n", chainMaxDeadCalls(mode), chainMaxLLMPerTurn)
	}
	a := by["adkbreaker"]
	fmt.Fprintf(out, "summary: scenario=chain mode=%s dead_calls_none=%d dead_calls_adkbreaker=%d llm_calls_per_turn=%.2f recovery_s=%.1f\n",
		mode, by["none"].DeadCalls, a.DeadCalls, a.LLMPerTurnMean, a.Recovery.Seconds())
}

func chainMaxDeadCalls(mode string) int {
	if mode == "fast" {
		return chainMaxDeadCallsFast
	}
	return chainMaxDeadCallsHang
}

// ChainMissed lists the chain targets the adkbreaker row misses.
func ChainMissed(mode string, a Row) []string {
	var miss []string
	if a.DeadCalls > chainMaxDeadCalls(mode) {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %d calls to the dead dependency (target ≤ %d)", a.DeadCalls, chainMaxDeadCalls(mode)))
	}
	if a.LLMPerTurnMean > chainMaxLLMPerTurn {
		miss = append(miss, fmt.Sprintf("adkbreaker made %.2f LLM calls per outage turn (target ≤ %.0f)", a.LLMPerTurnMean, chainMaxLLMPerTurn))
	}
	if a.Recovery < 0 || a.Recovery > MaxRecovery {
		miss = append(miss, fmt.Sprintf("adkbreaker recovered in %s (target ≤ %s)", a.RecoveryString(), MaxRecovery))
	}
	return miss
}
