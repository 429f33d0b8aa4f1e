package breaker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/agent/workflowagents/loopagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
)

// drainLoop runs one turn of an unbounded LoopAgent around a worker with
// model llm and one real tool, under plugin p, and reads it the way ADK's
// console launcher does: errors are noted and reading goes on. It returns
// the events and the errors seen. A run that yields more than limit items
// is spinning: it fails t, and stops reading (which stops the loop).
func drainLoop(t *testing.T, ctx context.Context, h *callbacks.Handler, llm model.LLM) ([]*session.Event, []error) {
	t.Helper()
	const limit = 200
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	lookup, _ := functiontool.New(functiontool.Config{Name: "lookup", Description: "x"},
		func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil })
	worker, err := llmagent.New(llmagent.Config{Name: "worker", Model: llm, Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := loopagent.New(loopagent.Config{AgentConfig: agent.Config{Name: "loop", SubAgents: []agent.Agent{worker}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "l", Agent: loop, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*session.Event
	var errs []error
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			errs = append(errs, err)
		} else {
			evs = append(evs, ev)
		}
		if len(evs)+len(errs) > limit {
			t.Errorf("the loop is spinning: %d events, %d errors (last: %v)", len(evs), len(errs), err)
			break
		}
	}
	return evs, errs
}

// TestTurnBudgetNeverSpinsALoopAgent: inside an unbounded LoopAgent whose
// model gives the plugin no tool call to escalate on (it only answers in
// text, or only calls tool names that do not exist), the plugin's final
// answer escalates, so the run returns right after it: no "turn already
// ended" error, however the consumer reads, with the caller's context
// cancelled or not, and nothing is left behind.
func TestTurnBudgetNeverSpinsALoopAgent(t *testing.T) {
	models := map[string]scripted.Step{
		"text only": func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("again") },
		"invented tools": func(*model.LLMRequest) *model.LLMResponse {
			return scripted.CallTools(scripted.Call{Name: "no_such_tool", Args: map[string]any{"q": "x"}})
		},
	}
	for name, step := range models {
		for _, cancelled := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/context cancelled"}[cancelled], func(t *testing.T) {
				h, err := breaker.NewHandler(breaker.WithTurnBudget(3, 0))
				if err != nil {
					t.Fatal(err)
				}
				ctx := t.Context()
				if cancelled {
					c, cancel := context.WithCancel(ctx)
					cancel()
					ctx = c
				}
				llm := scripted.New("s", step)
				evs, errs := drainLoop(t, ctx, h, llm)
				for _, err := range errs {
					if errors.Is(err, callbacks.ErrTurnEnded) {
						t.Fatalf("a model call after the end of the turn: %v (%d errors)", err, len(errs))
					}
				}
				if llm.Calls() != 3 {
					t.Fatalf("LLM calls = %d, want 3", llm.Calls())
				}
				if r := endedBy(evs); r != string(callbacks.TurnEndModelCallBudget) {
					t.Fatalf("the run did not end on the plugin's answer: ended by %q, %d events", r, len(evs))
				}
				if !strings.Contains(finalText(evs), "steps and time allowed") || !evs[len(evs)-1].Actions.Escalate {
					t.Fatalf("final answer %q, escalate %v", finalText(evs), evs[len(evs)-1].Actions.Escalate)
				}
				if tk, inv := h.Pending(); tk != 0 || inv != 0 {
					t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
				}
			})
		}
	}
}

// endlessLoop is a loop that never leaves on its own: built around worker,
// under a plugin that registers its OnEvent callback or not.
type endlessLoop struct {
	name    string
	onEvent bool
	build   func(t *testing.T, worker agent.Agent) agent.Agent
}

// TestEndedTurnReadsAreBounded: an agent that runs again after the turn
// ended reads the plugin's final answer again (a graph workflow looping back
// to a node: its routing, not the plugin, ends the loop), but at most 16
// times: a loop that never leaves — a LoopAgent without the plugin's
// OnEvent, a graph routing back forever — then gets ErrTurnEnded instead of
// spinning on final answers, after no more model calls than the budget.
func TestEndedTurnReadsAreBounded(t *testing.T) {
	loops := append([]endlessLoop{{name: "loopagent without OnEvent", build: func(t *testing.T, worker agent.Agent) agent.Agent {
		loop, err := loopagent.New(loopagent.Config{AgentConfig: agent.Config{Name: "loop", SubAgents: []agent.Agent{worker}}})
		if err != nil {
			t.Fatal(err)
		}
		return loop
	}}}, extraEndlessLoops()...)
	for _, l := range loops {
		t.Run(l.name, func(t *testing.T) {
			h, err := breaker.NewHandler(breaker.WithTurnBudget(3, 0))
			if err != nil {
				t.Fatal(err)
			}
			cfg := h.PluginConfig("adkbreaker")
			if !l.onEvent {
				cfg.OnEventCallback = nil
			}
			p, err := adkplugin.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			llm := scripted.New("s", func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("again") })
			worker, err := llmagent.New(llmagent.Config{Name: "worker", Model: llm})
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "l", Agent: l.build(t, worker), SessionService: session.InMemoryService(), AutoCreateSession: true,
				PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
			if err != nil {
				t.Fatal(err)
			}
			var finals int
			var runErr error
			items := 0
			for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
				if items++; items > 500 {
					t.Fatal("the loop is spinning")
				}
				if err != nil {
					runErr = err
					break // a consumer stops at the first error (a LoopAgent would go on)
				}
				if ev != nil && ev.Author == "worker" && endedBy([]*session.Event{ev}) == string(callbacks.TurnEndModelCallBudget) {
					finals++
				}
			}
			if !errors.Is(runErr, callbacks.ErrTurnEnded) || finals != 16 || llm.Calls() != 3 {
				t.Fatalf("error %v after %d final answers, %d model calls: want ErrTurnEnded after 16, 3 model calls", runErr, finals, llm.Calls())
			}
			if tk, inv := h.Pending(); tk != 0 || inv != 0 {
				t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
			}
		})
	}
}
