package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// row is one variant's line of the table.
type row struct {
	variant                 string
	deadCalls, healthChecks int
	preTrip                 int // dead calls admitted while the breaker was closed
	llmOutage               int
	llmPerTurnMean          float64 // turns started during the outage
	llmPerTurnMax           int
	tokensPerTurnMean       float64       // prompt + response tokens, turns started during the outage
	durMean, durP99, durMax time.Duration // turns started during the outage
	useful, degraded, fail  int           // all turns
	probes                  int
	recovery                time.Duration // -1: no successful call after the outage
	peak                    int
}

func summarise(r *result) row {
	w := row{variant: r.variant, deadCalls: r.dep.deadCalls, preTrip: r.dep.preTrip, healthChecks: r.dep.healthHits, llmOutage: r.llmOutage,
		probes: r.dep.probes, peak: r.dep.peak, recovery: -1}
	if !r.dep.firstOK.IsZero() {
		w.recovery = r.dep.firstOK.Sub(epoch.Add(outageTo))
	}
	var durs []time.Duration
	calls, tokens := 0, 0
	for _, t := range r.turns {
		switch t.outcome {
		case useful:
			w.useful++
		case degraded:
			w.degraded++
		default:
			w.fail++
		}
		if t.start < outageFrom || t.start >= outageTo {
			continue
		}
		calls += t.llmCalls
		tokens += t.tokens
		w.llmPerTurnMax = max(w.llmPerTurnMax, t.llmCalls)
		durs = append(durs, t.end-t.start)
	}
	if len(durs) > 0 {
		w.llmPerTurnMean = float64(calls) / float64(len(durs))
		w.tokensPerTurnMean = float64(tokens) / float64(len(durs))
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

func (w row) recoveryString() string {
	if w.recovery < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", w.recovery.Seconds())
}

// report writes the table, the targets check and the summary line (last).
func report(out io.Writer, mode string, healthy time.Duration, results []*result) {
	rows := make([]row, len(results))
	for i, r := range results {
		rows[i] = summarise(r)
	}
	fmt.Fprintf(out, "incident: reference outage, mode=%s — %s simulated, a turn every %s, %s answering in %s, down from minute %d to minute %d (%s)\n\n",
		mode, simulated, turnEvery, dependency, healthy, int(outageFrom.Minutes()), int(outageTo.Minutes()), modeWords(mode))
	fmt.Fprintln(out, "| variant | calls to the dead dependency | of which before the trip | health checks | LLM calls during the outage | LLM calls per turn mean / max | turn duration mean / p99 / max | answers useful / degraded / error | probes | recovery | peak concurrent calls |")
	fmt.Fprintln(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, w := range rows {
		fmt.Fprintf(out, "| %s | %d | %d | %d | %d | %.2f / %d | %s / %s / %s | %d / %d / %d | %d | %s | %d |\n",
			w.variant, w.deadCalls, w.preTrip, w.healthChecks, w.llmOutage, w.llmPerTurnMean, w.llmPerTurnMax,
			roundDur(w.durMean), roundDur(w.durP99), roundDur(w.durMax), w.useful, w.degraded, w.fail, w.probes, w.recoveryString(), w.peak)
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
	by := map[string]row{}
	for _, w := range rows {
		by[w.variant] = w
	}
	a := by["adkbreaker"]
	fmt.Fprintf(out, "summary: mode=%s dead_calls_none=%d dead_calls_retryandreflect=%d dead_calls_adkbreaker=%d recovery_s=%.1f llm_calls_per_turn=%.2f\n",
		mode, by["none"].deadCalls, by["retryandreflect"].deadCalls, a.deadCalls, a.recovery.Seconds(), a.llmPerTurnMean)
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
	maxDeadCalls         = 18
	minReduction         = 0.99
	maxRecovery          = 60 * time.Second
	maxDeadCallsDefaults = 30
	maxRecoveryDefaults  = 2 * time.Minute
	bulkhead             = 20
)

// missedTargets lists the targets the adkbreaker rows miss, with numbers.
func missedTargets(rows []row) []string {
	by := map[string]row{}
	for _, w := range rows {
		by[w.variant] = w
	}
	var miss []string
	a, d, none := by["adkbreaker"], by["adkbreaker-defaults"], by["none"]
	calls := func(w row) int { return w.deadCalls + w.healthChecks }
	if calls(a) > maxDeadCalls {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %d calls to the dead dependency (target ≤ %d)", calls(a), maxDeadCalls))
	}
	if none.deadCalls > 0 && float64(calls(a)) > (1-minReduction)*float64(none.deadCalls) {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %.2f%% fewer calls than none (target ≥ %.0f%%)", 100*(1-float64(calls(a))/float64(none.deadCalls)), 100*minReduction))
	}
	if a.recovery < 0 || a.recovery > maxRecovery {
		miss = append(miss, fmt.Sprintf("adkbreaker recovered in %s (target ≤ %s)", a.recoveryString(), maxRecovery))
	}
	if a.peak > bulkhead {
		miss = append(miss, fmt.Sprintf("adkbreaker had %d calls in flight (bulkhead %d)", a.peak, bulkhead))
	}
	if calls(d) > maxDeadCallsDefaults {
		miss = append(miss, fmt.Sprintf("defaults sent %d calls to the dead dependency (target ≤ %d)", calls(d), maxDeadCallsDefaults))
	}
	if d.recovery < 0 || d.recovery > maxRecoveryDefaults {
		miss = append(miss, fmt.Sprintf("defaults recovered in %s (target ≤ %s)", d.recoveryString(), maxRecoveryDefaults))
	}
	return miss
}
