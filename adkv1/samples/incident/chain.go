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
	"github.com/adkbreaker/adkbreaker/internal/incident"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The chain scenario (internal/incident/chain.go: its constants, table and
// targets): the same incident one hop down, the root agent calling the
// sub-agent "researcher" through an ADK agent tool.

// chainVariants: no breaker; adkbreaker with the incident's settings; the same
// with the agent-tool guard turned off (what registering the plugin on the
// root runner gave before: the sub-agent ran unprotected).
var chainVariants = []variant{
	{name: "none", plugins: func(*incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }},
	{name: "adkbreaker", plugins: func(s *incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return chainPlugin(s)
	}},
	{name: "adkbreaker-without-agent-tool-guard", plugins: func(s *incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return chainPlugin(s, breaker.WithoutAgentToolGuard())
	}},
}

// chainPlugin is adkbreaker with the incident's settings, registered on the
// root runner: enrich (the sub-agent's tool) mapped to the dependency.
func chainPlugin(s *incident.Sim, opts ...breaker.Option) ([]*adkplugin.Plugin, *registry.Registry, error) {
	reg, err := registry.New(registry.WithClock(s), registry.WithRand(incident.SeededRand()), registry.WithPolicy(incident.Dependency, incident.IncidentPolicy()))
	if err != nil {
		return nil, nil, err
	}
	pl, err := breaker.New(append([]breaker.Option{breaker.WithRegistry(reg), breaker.WithDependency(incident.Dependency, "enrich")}, opts...)...)
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
		o := incident.Useful
		switch last := incident.LastOf(responses); {
		case last == nil:
		case strings.Contains(fmt.Sprint(last["result"]), "ACME GmbH"):
			text = "ACME GmbH: logistics, 420 employees."
		case incident.IsPayload(last):
			text, o = "Live enrichment is unavailable right now; here is the profile without it.", incident.Degraded
		case len(responses) > incident.RootRetries:
			text, o = "Sorry, I could not enrich this profile.", incident.Failed
		}
		if text == "" {
			yield(m.bill(ctx, req, &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				genai.NewPartFromFunctionCall("researcher", map[string]any{"request": "Enrich ACME's profile."})}}}), nil)
			return
		}
		if ts, _ := ctx.Value(incident.TurnKey{}).(*incident.TurnStats); ts != nil {
			ts.Outcome = o
		}
		yield(m.bill(ctx, req, &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), TurnComplete: true}), nil)
	}
}

// count counts one model call in the turn and, during the outage, in the
// variant's total.
func (m analyst) count(ctx context.Context) {
	if ts, _ := ctx.Value(incident.TurnKey{}).(*incident.TurnStats); ts != nil {
		ts.LLMCalls++
	}
	if at := m.s.Since(); at >= incident.OutageFrom && at < incident.OutageTo {
		m.mu.Lock()
		m.res.LLMOutage++
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
		ts, _ := ctx.Value(incident.TurnKey{}).(*incident.TurnStats)
		var keep incident.Outcome
		if ts != nil {
			keep = ts.Outcome
		}
		for r, err := range m.analyst.GenerateContent(ctx, req, stream) {
			if ts != nil {
				ts.Outcome = keep
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// runChain plays the chain incident once for one variant.
func runChain(mode string, v variant) (*incident.Result, error) {
	return runChainEvery(mode, incident.ChainTurnEvery, v)
}

// runChainEvery is runChain with a new user turn every `every`.
func runChainEvery(mode string, every time.Duration, v variant) (*incident.Result, error) {
	s := incident.NewSim()
	plugins, reg, err := v.plugins(s)
	if err != nil {
		return nil, err
	}
	res := &incident.Result{Variant: v.name}
	dep := incident.NewDependencySim(s, mode, 0, reg, unavailable)
	call := incident.Guarded(s, v.guard, dep)
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
	res.Dep = dep.Stats()
	return res, nil
}

// runChainAll plays the chain incident for every variant, in parallel.
func runChainAll(mode string) ([]*incident.Result, error) {
	if mode != "hang" && mode != "fast" {
		return nil, incident.ErrUnknownMode
	}
	out := make([]*incident.Result, len(chainVariants))
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
	incident.ReportChain(w, mode, results)
	return nil
}
