package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/plugin/retryandreflect"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/internal/incident"
	"github.com/adkbreaker/adkbreaker/registry"
)

// variant is one way of running the same agent on the same traffic.
type variant struct {
	name string
	// plugins returns the runner's plugins, built on the simulation's clock;
	// reg is the registry whose breaker the dependency reports probes of
	// (nil: no breaker).
	plugins func(s *incident.Sim) (ps []*adkplugin.Plugin, reg *registry.Registry, err error)
	// guard, when set, wraps the enrich tool's call in a breaker of the
	// tool's own (the baselines of -scenario baselines, baselines.go).
	guard func(s *incident.Sim) incident.ToolGuard
}

var variants = []variant{
	{name: "none", plugins: func(*incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }},
	{name: "retryandreflect", plugins: func(*incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		p, err := retryandreflect.New() // default options: 3 retries per tool per invocation
		return []*adkplugin.Plugin{p}, nil, err
	}},
	{name: "adkbreaker", plugins: func(s *incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return adkbreakerPlugin(s, incident.IncidentPolicy())
	}},
	{name: "adkbreaker-defaults", plugins: func(s *incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return adkbreakerPlugin(s, registry.Policy{}) // no tuning at all
	}},
}

func adkbreakerPlugin(s *incident.Sim, p registry.Policy) ([]*adkplugin.Plugin, *registry.Registry, error) {
	reg, err := registry.New(registry.WithClock(s), registry.WithRand(incident.SeededRand()), registry.WithPolicy(incident.Dependency, p))
	if err != nil {
		return nil, nil, err
	}
	pl, err := breaker.New(breaker.WithRegistry(reg), breaker.WithDependency(incident.Dependency, "enrich"))
	return []*adkplugin.Plugin{pl}, reg, err
}

// analyst is the scripted model: it calls enrich once per turn, retries a
// failure up to three times, and stops early only when told firmly not to
// retry — adkbreaker's payload (retry.advised is false) or retryandreflect's
// "do not attempt to use the tool again". Model calls take no virtual time.
type analyst struct {
	s   *incident.Sim
	res *incident.Result
	mu  *sync.Mutex
}

func (analyst) Name() string { return "scripted-analyst" }

func (m analyst) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		ts, _ := ctx.Value(incident.TurnKey{}).(*incident.TurnStats)
		if ts != nil {
			ts.LLMCalls++
		}
		if at := m.s.Since(); at >= incident.OutageFrom && at < incident.OutageTo {
			m.mu.Lock()
			m.res.LLMOutage++
			m.mu.Unlock()
		}
		var responses []map[string]any
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					responses = append(responses, p.FunctionResponse.Response)
				}
			}
		}
		text, o := incident.Decide(responses)
		if text == "" {
			yield(m.bill(ctx, req, &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				genai.NewPartFromFunctionCall("enrich", map[string]any{"company": "ACME"})}}}), nil)
			return
		}
		if ts != nil {
			ts.Outcome = o
		}
		yield(m.bill(ctx, req, &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), TurnComplete: true}), nil)
	}
}

// unavailable is the enrichment API's answer in mode fast: a 503.
func unavailable() error { return &callbacks.StatusError{Code: http.StatusServiceUnavailable} }

// run plays the incident once for one variant, the dependency answering in
// healthy when it is up, a new user turn every 100 ms.
func run(mode string, healthy time.Duration, v variant) (*incident.Result, error) {
	return runEvery(mode, healthy, incident.TurnEvery, v)
}

// runEvery is run with a new user turn every `every`.
func runEvery(mode string, healthy, every time.Duration, v variant) (*incident.Result, error) {
	s := incident.NewSim()
	plugins, reg, err := v.plugins(s)
	if err != nil {
		return nil, err
	}
	res := &incident.Result{Variant: v.name}
	dep := incident.NewDependencySim(s, mode, healthy, reg, unavailable)
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
	a, err := llmagent.New(llmagent.Config{Name: "analyst", Model: analyst{s: s, res: res, mu: &mu}, Tools: []tool.Tool{enrich}})
	if err != nil {
		return nil, err
	}
	if err := replay(s, a, plugins, every, res); err != nil {
		return nil, err
	}
	res.Dep = dep.Stats()
	return res, nil
}

// replay runs root on ADK's runner with plugins, a new user turn every
// `every` for the simulated time (the traffic), recording each turn in
// res.turns, until the simulation ends.
func replay(s *incident.Sim, root agent.Agent, plugins []*adkplugin.Plugin, every time.Duration, res *incident.Result) error {
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "incident", Agent: root, SessionService: svc, AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		return err
	}
	n := int(incident.Simulated / every)
	res.Turns = make([]incident.TurnStats, n)
	s.Go(func() {
		for i := range n {
			s.Go(func() { turn(s, r, svc, i, &res.Turns[i]) })
			s.Sleep(every)
		}
	})
	s.Run()
	return nil
}

func turn(s *incident.Sim, r *runner.Runner, svc session.Service, i int, ts *incident.TurnStats) {
	ts.Start = s.Since()
	ctx := context.WithValue(context.Background(), incident.TurnKey{}, ts)
	sid := fmt.Sprintf("t%d", i)
	ts.Outcome = incident.Failed
	for ev, err := range r.Run(ctx, "user", sid, genai.NewContentFromText("Enrich ACME's profile.", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			ts.Outcome = incident.Failed
			break
		}
		if m, ok := ev.CustomMetadata["adkbreaker"].(map[string]any); ok && m["ended_turn"] == true {
			ts.Outcome = incident.Degraded // the plugin answered: what is unavailable, when to retry
		}
	}
	ts.End = s.Since()
	_ = svc.Delete(context.Background(), &session.DeleteRequest{AppName: "incident", UserID: "user", SessionID: sid})
}

// runAll plays the incident for the variants vs, in parallel (each has its
// own virtual clock; results do not depend on scheduling).
func runAll(mode string, healthy time.Duration, vs []variant) ([]*incident.Result, error) {
	if mode != "hang" && mode != "fast" {
		return nil, incident.ErrUnknownMode
	}
	if healthy <= 0 || healthy >= incident.CallTimeout {
		return nil, incident.ErrHealthy
	}
	out := make([]*incident.Result, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Go(func() { out[i], errs[i] = run(mode, healthy, v) })
	}
	wg.Wait()
	return out, errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...)
}
