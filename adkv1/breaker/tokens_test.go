package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/agenttool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// costLog records the turn costs the plugin reports.
type costLog struct {
	mu  sync.Mutex
	evs []observe.TurnCostEvent
}

func (c *costLog) TurnCost(_ context.Context, ev observe.TurnCostEvent) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

func (c *costLog) events() []observe.TurnCostEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]observe.TurnCostEvent(nil), c.evs...)
}

// TestTokenBudgetEndsAStubbornModelInAnOutage: a model that keeps calling a
// tool whose dependency is down (each call reporting 1000 tokens) is
// answered by the plugin at the first model call after the budget is
// spent: the turn spends at most one model call past it, ends with the
// turn budget's readable answer (reason token_budget), reports its cost
// as a turn that met a short-circuit, and leaves nothing behind.
func TestTokenBudgetEndsAStubbornModelInAnOutage(t *testing.T) {
	const perCall, budget = 1000, 2500
	costs := &costLog{}
	reader := sdkmetric.NewManualReader()
	tally := statuspage.NewTurnCosts(nil) // the status page's figure
	e := newEnv(t, scripted.Costing(loopForever, 600, 400),
		breaker.WithTokenBudget(budget), breaker.WithTurnLimit(100), breaker.WithCostObserver(costs), breaker.WithCostObserver(tally),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err := e.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	evs := e.mustTurn("loop")
	calls := e.llm.Calls()
	if calls != 3 {
		t.Fatalf("LLM calls = %d, want 3 (2000 < 2500 tokens after 2; the 4th is answered by the plugin)", calls)
	}
	if spent := calls * perCall; spent > budget+perCall {
		t.Fatalf("spent %d tokens, more than one model call past the budget %d", spent, budget)
	}
	if r := endedBy(evs); r != string(observe.TurnEndTokenBudget) {
		t.Fatalf("ended by %q, want token_budget", r)
	}
	if final := finalText(evs); !strings.Contains(final, "billing-api was temporarily unavailable") {
		t.Fatalf("final answer = %q", final)
	}
	if !escalated(evs) {
		t.Fatal("the tool call after which the budget was spent did not escalate")
	}
	got := costs.events()
	if len(got) != 1 || got[0].Tokens != 3*perCall || !got[0].ShortCircuit || got[0].Met() != observe.MetShortCircuit {
		t.Fatalf("turn costs = %+v, want one of 3000 tokens that met a short-circuit", got)
	}
	if c := tally.LastHour(); c.OutageTokens != 3*perCall || c.OutageTurns != 1 {
		t.Fatalf("status page tally = %+v, want 3000 outage tokens in 1 turn", c)
	}
	m := metrics(t, reader)
	if got := m["adkbreaker.outage.tokens"]["met=short_circuit"]; got != 3*perCall {
		t.Fatalf("adkbreaker.outage.tokens = %v, want 3000 (met=short_circuit)", m["adkbreaker.outage.tokens"])
	}
	if got := m["adkbreaker.turns_ended"]["reason=token_budget"]; got != 1 {
		t.Fatalf("turns_ended = %v", m["adkbreaker.turns_ended"])
	}
	e.assertNoPending()
	// The next turn has a budget of its own.
	e.mustTurn("again")
	if calls := e.llm.Calls(); calls != 6 {
		t.Fatalf("LLM calls after two turns = %d, want 6", calls)
	}
	e.assertNoPending()
}

// TestTokenBudgetFromFile: defaults.max_turn_tokens sets the budget; 0 is
// off.
func TestTokenBudgetFromFile(t *testing.T) {
	f, err := config.Parse([]byte("version: 1\ndefaults:\n  max_turn_tokens: 1500\n  max_model_calls: 20\n"), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, scripted.Costing(loopForever, 600, 400), breaker.WithConfig(f))
	evs := e.mustTurn("loop")
	if calls := e.llm.Calls(); calls != 2 || endedBy(evs) != "token_budget" {
		t.Fatalf("LLM calls = %d, ended by %q; want 2, token_budget", calls, endedBy(evs))
	}
	e.assertNoPending()

	off := newEnv(t, scripted.Costing(loopForever, 600, 400), breaker.WithTurnBudget(6, 0), breaker.WithTokenBudget(0))
	if evs := off.mustTurn("loop"); off.llm.Calls() != 6 || endedBy(evs) != "model_call_budget" {
		t.Fatalf("with no token budget: LLM calls = %d, ended by %q; want 6, model_call_budget", off.llm.Calls(), endedBy(evs))
	}
	off.assertNoPending()
	if _, err := breaker.New(breaker.WithTokenBudget(-1)); err == nil || !strings.Contains(err.Error(), "max_turn_tokens: must be ≥ 0, got -1") {
		t.Fatalf("negative budget: %v", err)
	}
}

// TestTokenBudgetCountsSubAgents: the tokens of a sub-agent reached
// through an ADK agent tool count in the root turn. The root's own calls
// cost 10 tokens, the sub-agent's 1000: the root turn ends on the budget
// (2500) once the stubborn sub-agent spent it, after one root call and
// three sub-agent calls; counted per run, the root would never reach it.
func TestTokenBudgetCountsSubAgents(t *testing.T) {
	costs := &costLog{}
	h, err := breaker.NewHandler(breaker.WithDependency("crm-api", "lookup"), breaker.WithTokenBudget(2500), breaker.WithCostObserver(costs),
		breaker.WithTurnBudget(12, 0)) // a backstop: counted per run, the root would loop
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	var lookups atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look a company up."},
		func(agent.ToolContext, struct {
			Company string `json:"company"`
		}) (map[string]any, error) {
			n := lookups.Add(1)
			return map[string]any{"company": fmt.Sprintf("ACME %d", n)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// The sub-agent asks for a new company each time (no repeated call).
	subStep := func(req *model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "lookup", Args: map[string]any{"company": fmt.Sprint(len(req.Contents))}})
	}
	subLLM := scripted.New("researcher", scripted.Costing(subStep, 700, 300))
	sub, err := llmagent.New(llmagent.Config{Name: "researcher", Description: "researcher sub-agent", Model: subLLM, Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	// The root keeps asking the researcher, whatever it answers.
	rootStep := func(req *model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "researcher", Args: map[string]any{"request": fmt.Sprint(len(req.Contents))}})
	}
	rootLLM := scripted.New("root", scripted.Costing(rootStep, 6, 4))
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: rootLLM, Tools: []tool.Tool{agenttool.New(sub, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "tokens", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*session.Event
	for ev, err := range r.Run(t.Context(), "u", "s1", genai.NewContentFromText("Profile ACME.", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if rc, sc := rootLLM.Calls(), subLLM.Calls(); rc != 1 || sc != 3 {
		t.Fatalf("model calls: root %d, sub-agent %d; want 1 and 3 (10 + 3000 tokens ≥ 2500)", rc, sc)
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndTokenBudget) {
		t.Fatalf("root turn ended by %q, want token_budget", r)
	}
	got := costs.events()
	if len(got) != 1 || got[0].Tokens != 3010 || got[0].Met() != "" {
		t.Fatalf("turn costs = %+v, want one root turn of 3010 tokens that met nothing", got)
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
}

// TestTurnCostReadsFailoverMetadata: a turn whose model responses say (in
// the keys package failover writes) that a call failed over, or failed
// over from a stalled endpoint, is reported as having met a failover or a
// stall; a turn with no such response met nothing.
func TestTurnCostReadsFailoverMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   map[string]any
		met  string
	}{
		{"plain", nil, ""},
		{"failover", map[string]any{failover.AttrEndpoint: registry.Key("backup"), failover.AttrFailoverFrom: registry.Key("primary"), failover.AttrFailoverReason: failover.ReasonServerError}, observe.MetFailover},
		{"stall", map[string]any{failover.AttrFailoverFrom: registry.Key("primary"), failover.AttrFailoverReason: failover.ReasonStall}, observe.MetStall},
		{"unavailable", map[string]any{failover.AttrUnavailable: true}, observe.MetShortCircuit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			costs := &costLog{}
			step := func(*model.LLMRequest) *model.LLMResponse {
				r := scripted.WithUsage(scripted.Text("done"), 30, 12)
				r.CustomMetadata = tc.md
				return r
			}
			e := newEnv(t, step, breaker.WithCostObserver(costs))
			e.mustTurn("hello")
			got := costs.events()
			if len(got) != 1 || got[0].Tokens != 42 || got[0].Met() != tc.met {
				t.Fatalf("turn costs = %+v, want one of 42 tokens that met %q", got, tc.met)
			}
			e.assertNoPending()
		})
	}
}

// TestTurnCostStreamingCountsOnce: in streaming mode the partial chunks
// are not counted, only the aggregated response.
func TestTurnCostStreamingCountsOnce(t *testing.T) {
	costs := &costLog{}
	e := newEnv(t, scripted.Costing(func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("a streamed answer") }, 30, 12),
		breaker.WithCostObserver(costs))
	for _, err := range e.r.Run(t.Context(), "u", "s1", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := costs.events(); len(got) != 1 || got[0].Tokens != 42 {
		t.Fatalf("turn costs = %+v, want one of 42 tokens", got)
	}
	e.assertNoPending()
}

// stallingLLM streams one chunk and then ends the call with the error a
// failover model gives a stall after the first chunk.
type stallingLLM struct{}

func (stallingLLM) Name() string { return "stalling" }
func (stallingLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if !yield(&model.LLMResponse{Content: genai.NewContentFromText("The invoice is", genai.RoleModel), Partial: true}, nil) {
			return
		}
		yield(nil, &failover.StallError{Endpoint: "model:primary", Model: "m", Phase: failover.StallIdle, Deadline: time.Minute, Chunks: 1, Parts: 1, TextBytes: 14})
	}
}

// TestTurnCostMidstreamStall: a model call that ended in a stall after its
// first chunk (failover.StallError, which answers no response ADK shows
// the after-model callbacks) marks the turn as having met a stall; the
// error still reaches the caller unchanged.
func TestTurnCostMidstreamStall(t *testing.T) {
	costs := &costLog{}
	h, err := breaker.NewHandler(breaker.WithCostObserver(costs))
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: stallingLLM{}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "stall", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var runErr error
	for _, err := range r.Run(t.Context(), "u", "s1", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
		if err != nil && runErr == nil {
			runErr = err
		}
	}
	if !errors.Is(runErr, failover.ErrStall) {
		t.Fatalf("run error = %v, want the stall", runErr)
	}
	got := costs.events()
	if len(got) != 1 || !got[0].Stall || got[0].Met() != observe.MetStall {
		t.Fatalf("turn costs = %+v, want one turn that met a stall", got)
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
}
