package incident

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Row is one variant's line of the table.
type Row struct {
	Variant                 string
	DeadCalls, HealthChecks int
	PreTrip                 int // dead calls admitted while the breaker was closed
	LLMOutage               int
	LLMPerTurnMean          float64 // turns started during the outage
	llmPerTurnMax           int
	TokensPerTurnMean       float64       // prompt + response tokens, turns started during the outage
	durMean, durP99, durMax time.Duration // turns started during the outage
	useful, degraded, fail  int           // all turns
	probes                  int
	Recovery                time.Duration // -1: no successful call after the outage
	Peak                    int
}

func Summarise(r *Result) Row {
	w := Row{Variant: r.Variant, DeadCalls: r.Dep.DeadCalls, PreTrip: r.Dep.PreTrip, HealthChecks: r.Dep.healthHits, LLMOutage: r.LLMOutage,
		probes: r.Dep.probes, Peak: r.Dep.Peak, Recovery: -1}
	if !r.Dep.firstOK.IsZero() {
		w.Recovery = r.Dep.firstOK.Sub(epoch.Add(OutageTo))
	}
	var durs []time.Duration
	calls, tokens := 0, 0
	for _, t := range r.Turns {
		switch t.Outcome {
		case Useful:
			w.useful++
		case Degraded:
			w.degraded++
		default:
			w.fail++
		}
		if t.Start < OutageFrom || t.Start >= OutageTo {
			continue
		}
		calls += t.LLMCalls
		tokens += t.Tokens
		w.llmPerTurnMax = max(w.llmPerTurnMax, t.LLMCalls)
		durs = append(durs, t.End-t.Start)
	}
	if len(durs) > 0 {
		w.LLMPerTurnMean = float64(calls) / float64(len(durs))
		w.TokensPerTurnMean = float64(tokens) / float64(len(durs))
		var sum time.Duration
		for _, d := range durs {
			sum += d
		}
		w.durMean = sum / time.Duration(len(durs))
		slices.Sort(durs)
		w.durP99 = durs[min(len(durs)-1, int(math.Ceil(0.99*float64(len(durs))))-1)]
		w.durMax = durs[len(durs)-1]
	}
	return w
}

func (w Row) RecoveryString() string {
	if w.Recovery < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", w.Recovery.Seconds())
}

// Report writes the table, the targets check and the summary line (last).
func Report(out io.Writer, mode string, healthy time.Duration, results []*Result) {
	rows := make([]Row, len(results))
	for i, r := range results {
		rows[i] = Summarise(r)
	}
	fmt.Fprintf(out, "incident: reference outage, mode=%s — %s simulated, a turn every %s, %s answering in %s, down from minute %d to minute %d (%s)\n\n",
		mode, Simulated, TurnEvery, Dependency, healthy, int(OutageFrom.Minutes()), int(OutageTo.Minutes()), modeWords(mode))
	fmt.Fprintln(out, "| variant | calls to the dead dependency | of which before the trip | health checks | LLM calls during the outage | LLM calls per turn mean / max | turn duration mean / p99 / max | answers useful / degraded / error | probes | recovery | peak concurrent calls |")
	fmt.Fprintln(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, w := range rows {
		fmt.Fprintf(out, "| %s | %d | %d | %d | %d | %.2f / %d | %s / %s / %s | %d / %d / %d | %d | %s | %d |\n",
			w.Variant, w.DeadCalls, w.PreTrip, w.HealthChecks, w.LLMOutage, w.LLMPerTurnMean, w.llmPerTurnMax,
			roundDur(w.durMean), roundDur(w.durP99), roundDur(w.durMax), w.useful, w.degraded, w.fail, w.probes, w.RecoveryString(), w.Peak)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Per-turn columns are over the turns that started during the outage; answers over all turns;")
	fmt.Fprintln(out, "recovery is from the dependency's return to the first call that succeeded.")
	fmt.Fprintln(out)
	if miss := missedTargets(rows); len(miss) > 0 {
		fmt.Fprintf(out, "targets: MISSED: %s\n", strings.Join(miss, "; "))
	} else {
		fmt.Fprintln(out, "targets: met (adkbreaker ≤ 18 dead calls, ≥ 99% fewer than none, recovery ≤ 60 s; defaults ≤ 30 calls, recovery ≤ 2 min; peak ≤ bulkhead)")
	}
	by := map[string]Row{}
	for _, w := range rows {
		by[w.Variant] = w
	}
	a := by["adkbreaker"]
	fmt.Fprintf(out, "summary: mode=%s dead_calls_none=%d dead_calls_retryandreflect=%d dead_calls_adkbreaker=%d recovery_s=%.1f llm_calls_per_turn=%.2f\n",
		mode, by["none"].DeadCalls, by["retryandreflect"].DeadCalls, a.DeadCalls, a.Recovery.Seconds(), a.LLMPerTurnMean)
}

func modeWords(mode string) string {
	if mode == "hang" {
		return "calls hang until the 5s timeout"
	}
	return "calls fail with 503 in 20ms"
}

func roundDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// The targets.
const (
	MaxDeadCalls         = 18
	minReduction         = 0.99
	MaxRecovery          = 60 * time.Second
	MaxDeadCallsDefaults = 30
	MaxRecoveryDefaults  = 2 * time.Minute
	Bulkhead             = 20
)

// missedTargets lists the targets the adkbreaker rows miss, with numbers.
func missedTargets(rows []Row) []string {
	by := map[string]Row{}
	for _, w := range rows {
		by[w.Variant] = w
	}
	var miss []string
	a, d, none := by["adkbreaker"], by["adkbreaker-defaults"], by["none"]
	calls := func(w Row) int { return w.DeadCalls + w.HealthChecks }
	if calls(a) > MaxDeadCalls {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %d calls to the dead dependency (target ≤ %d)", calls(a), MaxDeadCalls))
	}
	if none.DeadCalls > 0 && float64(calls(a)) > (1-minReduction)*float64(none.DeadCalls) {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %.2f%% fewer calls than none (target ≥ %.0f%%)", 100*(1-float64(calls(a))/float64(none.DeadCalls)), 100*minReduction))
	}
	if a.Recovery < 0 || a.Recovery > MaxRecovery {
		miss = append(miss, fmt.Sprintf("adkbreaker recovered in %s (target ≤ %s)", a.RecoveryString(), MaxRecovery))
	}
	if a.Peak > Bulkhead {
		miss = append(miss, fmt.Sprintf("adkbreaker had %d calls in flight (bulkhead %d)", a.Peak, Bulkhead))
	}
	if calls(d) > MaxDeadCallsDefaults {
		miss = append(miss, fmt.Sprintf("defaults sent %d calls to the dead dependency (target ≤ %d)", calls(d), MaxDeadCallsDefaults))
	}
	if d.Recovery < 0 || d.Recovery > MaxRecoveryDefaults {
		miss = append(miss, fmt.Sprintf("defaults recovered in %s (target ≤ %s)", d.RecoveryString(), MaxRecoveryDefaults))
	}
	return miss
}
