package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/agenttool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The chain scenario: the same incident one hop down. The root agent
// ("assistant") has one tool, an ADK agent tool for the sub-agent
// "researcher", whose tool enrich calls the enrichment API. The plugin is
// registered on the root runner only, as users register it, with no turn
// budget. A turn every 500 ms.
const (
	chainTurnEvery = 500 * time.Millisecond
	rootRetries    = 3 // the root model re-invokes a failed researcher up to this many times per turn
)

// Targets of the chain scenario.
const (
	chainMaxDeadCallsFast = 19 // the arithmetic floor of the incident's settings (see docs/incident.md)
	chainMaxDeadCallsHang = 18
	chainMaxLLMPerTurn    = 6.0 // root and sub-agent, mean over the outage's turns
)

// chainVariants: no breaker; adkbreaker with the incident's settings; the same
// with the agent-tool guard turned off (what registering the plugin on the
// root runner gave before: the sub-agent ran unprotected).
var chainVariants = []variant{
	{name: "none", plugins: func(*sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }},
	{name: "adkbreaker", plugins: func(s *sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return chainPlugin(s)
	}},
	{name: "adkbreaker-without-agent-tool-guard", plugins: func(s *sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return chainPlugin(s, breaker.WithoutAgentToolGuard())
	}},
}

// chainPlugin is adkbreaker with the incident's settings, registered on the
// root runner: enrich (the sub-agent's tool) mapped to the dependency.
func chainPlugin(s *sim, opts ...breaker.Option) ([]*adkplugin.Plugin, *registry.Registry, error) {
	reg, err := registry.New(registry.WithClock(s), registry.WithRand(seededRand()), registry.WithPolicy(dependency, incidentPolicy()))
	if err != nil {
		return nil, nil, err
	}
	pl, err := breaker.New(append([]breaker.Option{breaker.WithRegistry(reg), breaker.WithDependency(dependency, "enrich")}, opts...)...)
	return []*adkplugin.Plugin{pl}, reg, err
}

// assistant is the root's scripted model: it asks the researcher; when
// the answer is not the profile it asks again, up to three times, and it
// stops at once when told firmly that the capability is unavailable
// (adkbreaker's payload).
type assistant struct{ analyst }

func (assistant) Name() string { return "scripted-assistant" }

func (m assistant) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.count(ctx)
		var responses []map[string]any
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					responses = append(responses, p.FunctionResponse.Response)
				}
			}
		}
		var text string
		o := useful
		switch last := lastOf(responses); {
		case last == nil:
		case strings.Contains(fmt.Sprint(last["result"]), "ACME GmbH"):
			text = "ACME GmbH: logistics, 420 employees."
		case isPayload(last):
			text, o = "Live enrichment is unavailable right now; here is the profile without it.", degraded
		case len(responses) > rootRetries:
			text, o = "Sorry, I could not enrich this profile.", failed
		}
		if text == "" {
			yield(m.bill(ctx, req, &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				genai.NewPartFromFunctionCall("researcher", map[string]any{"request": "Enrich ACME's profile."})}}}), nil)
			return
		}
		if ts, _ := ctx.Value(turnKey{}).(*turnStats); ts != nil {
			ts.outcome = o
		}
		yield(m.bill(ctx, req, &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), TurnComplete: true}), nil)
	}
}

func lastOf(rs []map[string]any) map[string]any {
	if len(rs) == 0 {
		return nil
	}
	return rs[len(rs)-1]
}

// count counts one model call in the turn and, during the outage, in the
// variant's total.
func (m analyst) count(ctx context.Context) {
	if ts, _ := ctx.Value(turnKey{}).(*turnStats); ts != nil {
		ts.llmCalls++
	}
	if at := m.s.Since(); at >= outageFrom && at < outageTo {
		m.mu.Lock()
		m.res.llmOutage++
		m.mu.Unlock()
	}
}

// researcherModel is the sub-agent's scripted model: the analyst's
// reasoning (enrich, retry a failure up to three times, stop on a firm "do
// not retry"), without deciding the turn's outcome, which is the root's.
type researcherModel struct{ analyst }

func (researcherModel) Name() string { return "scripted-researcher" }

func (m researcherModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		ts, _ := ctx.Value(turnKey{}).(*turnStats)
		var keep outcome
		if ts != nil {
			keep = ts.outcome
		}
		for r, err := range m.analyst.GenerateContent(ctx, req, stream) {
			if ts != nil {
				ts.outcome = keep
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// runChain plays the chain incident once for one variant.
func runChain(mode string, v variant) (*result, error) {
	return runChainEvery(mode, chainTurnEvery, v)
}

// runChainEvery is runChain with a new user turn every `every`.
func runChainEvery(mode string, every time.Duration, v variant) (*result, error) {
	s := newSim()
	plugins, reg, err := v.plugins(s)
	if err != nil {
		return nil, err
	}
	res := &result{variant: v.name}
	dep := &dependencySim{s: s, mode: mode, reg: reg, st: depStats{perBucket: make([]int, int(simulated/bucket))}}
	call := guarded(s, v, dep)
	var mu sync.Mutex
	type enrichArgs struct {
		Company string `json:"company"`
	}
	enrich, err := functiontool.New(functiontool.Config{Name: "enrich", Description: "Enrich a company profile from the third-party API."},
		func(ctx agent.ToolContext, _ enrichArgs) (map[string]any, error) { return call(ctx) })
	if err != nil {
		return nil, err
	}
	an := analyst{s: s, res: res, mu: &mu}
	researcher, err := llmagent.New(llmagent.Config{Name: "researcher", Description: "Researches companies with the enrichment API.",
		Model: researcherModel{an}, Tools: []tool.Tool{enrich}})
	if err != nil {
		return nil, err
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: assistant{an}, Tools: []tool.Tool{agenttool.New(researcher, nil)}})
	if err != nil {
		return nil, err
	}
	if err := replay(s, root, plugins, every, res); err != nil {
		return nil, err
	}
	res.dep = dep.st
	return res, nil
}

// runChainAll plays the chain incident for every variant, in parallel.
func runChainAll(mode string) ([]*result, error) {
	if mode != "hang" && mode != "fast" {
		return nil, errUnknownMode
	}
	out := make([]*result, len(chainVariants))
	errs := make([]error, len(chainVariants))
	var wg sync.WaitGroup
	for i, v := range chainVariants {
		wg.Go(func() { out[i], errs[i] = runChain(mode, v) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// chainMain runs the chain scenario and writes its table, targets and
// summary line.
func chainMain(w io.Writer, mode string) error {
	results, err := runChainAll(mode)
	if err != nil {
		return err
	}
	reportChain(w, mode, results)
	return nil
}

func reportChain(out io.Writer, mode string, results []*result) {
	fmt.Fprintf(out, "incident: scenario=chain, mode=%s — %s simulated, a turn every %s; root agent → agent tool → researcher → enrich; %s down from minute %d to minute %d (%s); the plugin on the root runner only, no turn budget\n\n",
		mode, simulated, chainTurnEvery, dependency, int(outageFrom.Minutes()), int(outageTo.Minutes()), modeWords(mode))
	fmt.Fprintln(out, "| variant | calls to the dead dependency | LLM calls during the outage | LLM calls per turn mean / max | turn duration mean / p99 / max | answers useful / degraded / error | probes | recovery | peak concurrent calls |")
	fmt.Fprintln(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	by := map[string]row{}
	for _, r := range results {
		w := summarise(r)
		by[w.variant] = w
		fmt.Fprintf(out, "| %s | %d | %d | %.2f / %d | %s / %s / %s | %d / %d / %d | %d | %s | %d |\n",
			w.variant, w.deadCalls, w.llmOutage, w.llmPerTurnMean, w.llmPerTurnMax,
			roundDur(w.durMean), roundDur(w.durP99), roundDur(w.durMax), w.useful, w.degraded, w.fail, w.probes, w.recoveryString(), w.peak)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "LLM calls count the root's and the researcher's. Per-turn columns are over the turns that started during")
	fmt.Fprintln(out, "the outage; answers over all turns; recovery is from the dependency's return to the first call that succeeded.")
	fmt.Fprintln(out)
	if miss := chainMissed(mode, by["adkbreaker"]); len(miss) > 0 {
		fmt.Fprintf(out, "targets: MISSED: %s\n", strings.Join(miss, "; "))
	} else {
		fmt.Fprintf(out, "targets: met (adkbreaker ≤ %d dead calls, ≤ %.0f LLM calls per turn, recovery ≤ 60 s)\n", chainMaxDeadCalls(mode), chainMaxLLMPerTurn)
	}
	a := by["adkbreaker"]
	fmt.Fprintf(out, "summary: scenario=chain mode=%s dead_calls_none=%d dead_calls_adkbreaker=%d llm_calls_per_turn=%.2f recovery_s=%.1f\n",
		mode, by["none"].deadCalls, a.deadCalls, a.llmPerTurnMean, a.recovery.Seconds())
}

func chainMaxDeadCalls(mode string) int {
	if mode == "fast" {
		return chainMaxDeadCallsFast
	}
	return chainMaxDeadCallsHang
}

// chainMissed lists the chain targets the adkbreaker row misses.
func chainMissed(mode string, a row) []string {
	var miss []string
	if a.deadCalls > chainMaxDeadCalls(mode) {
		miss = append(miss, fmt.Sprintf("adkbreaker sent %d calls to the dead dependency (target ≤ %d)", a.deadCalls, chainMaxDeadCalls(mode)))
	}
	if a.llmPerTurnMean > chainMaxLLMPerTurn {
		miss = append(miss, fmt.Sprintf("adkbreaker made %.2f LLM calls per outage turn (target ≤ %.0f)", a.llmPerTurnMean, chainMaxLLMPerTurn))
	}
	if a.recovery < 0 || a.recovery > maxRecovery {
		miss = append(miss, fmt.Sprintf("adkbreaker recovered in %s (target ≤ %s)", a.recoveryString(), maxRecovery))
	}
	return miss
}
