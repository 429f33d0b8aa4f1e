package breaker_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool/functiontool"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// loopForever is a model that never stops calling get_invoice, a new
// invoice each time (the same one again would be the repeated-call guard's,
// see repeat_test.go).
func loopForever(req *model.LLMRequest) *model.LLMResponse {
	return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": strconv.Itoa(len(req.Contents))}})
}

// endedBy returns the reason the plugin gave for ending the turn, from the
// final event's metadata ("" if the plugin did not end it).
func endedBy(evs []*session.Event) string {
	if len(evs) == 0 {
		return ""
	}
	m, _ := evs[len(evs)-1].CustomMetadata["adkbreaker"].(map[string]any)
	r, _ := m["reason"].(string)
	return r
}

// escalated reports whether any event escalates (what a LoopAgent stops on).
func escalated(evs []*session.Event) bool {
	for _, ev := range evs {
		if ev.Actions.Escalate {
			return true
		}
	}
	return false
}

// TestTurnBudgetEndsALoopingModel: a model that calls a healthy tool forever
// is answered by the plugin after the budget's model calls, with a readable
// answer (naming the dependency when it was short-circuited in the turn),
// the turns_ended counter says why, and nothing is left behind.
func TestTurnBudgetEndsALoopingModel(t *testing.T) {
	t.Run("healthy tool", func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		e := newEnv(t, loopForever, breaker.WithTurnBudget(4, 0),
			breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		evs := e.mustTurn("loop")
		if calls := e.llm.Calls(); calls != 4 {
			t.Fatalf("LLM calls = %d, want 4 (the 5th is answered by the plugin)", calls)
		}
		if got := e.backend.Hits(); got != 4 {
			t.Fatalf("backend hits = %d, want 4", got)
		}
		final := finalText(evs)
		if !strings.Contains(final, "within the steps and time allowed for one answer") {
			t.Fatalf("final answer = %q", final)
		}
		if r := endedBy(evs); r != string(callbacks.TurnEndModelCallBudget) {
			t.Fatalf("ended by %q", r)
		}
		if !escalated(evs) {
			t.Fatal("the tool call that spent the budget did not escalate")
		}
		if got := metrics(t, reader)["adkbreaker.turns_ended"]["reason=model_call_budget"]; got != 1 {
			t.Fatalf("turns_ended = %v", metrics(t, reader)["adkbreaker.turns_ended"])
		}
		e.assertNoPending()
		// The next turn has a budget of its own.
		e.mustTurn("again")
		if calls := e.llm.Calls(); calls != 8 {
			t.Fatalf("LLM calls after two turns = %d, want 8", calls)
		}
		e.assertNoPending()
	})
	t.Run("short-circuited dependency is named", func(t *testing.T) {
		e := newEnv(t, loopForever, breaker.WithTurnBudget(3, 0), breaker.WithTurnLimit(100))
		if err := e.reg.Isolate("billing-api"); err != nil {
			t.Fatal(err)
		}
		evs := e.mustTurn("loop")
		if calls := e.llm.Calls(); calls != 3 {
			t.Fatalf("LLM calls = %d, want 3", calls)
		}
		if final := finalText(evs); !strings.Contains(final, "billing-api was temporarily unavailable") {
			t.Fatalf("final answer does not say what was unavailable: %q", final)
		}
		e.assertNoPending()
	})
	t.Run("from a configuration file", func(t *testing.T) {
		f, err := config.Parse([]byte("version: 1\ndefaults:\n  max_model_calls: 2\n"), config.YAML)
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, loopForever, breaker.WithConfig(f))
		evs := e.mustTurn("loop")
		if calls := e.llm.Calls(); calls != 2 || endedBy(evs) != "model_call_budget" {
			t.Fatalf("LLM calls = %d, ended by %q; want 2, model_call_budget", calls, endedBy(evs))
		}
		e.assertNoPending()
	})
}

// TestTurnBudgetInTime: the time budget runs on the registry's clock from
// the start of the run; the tool call that crosses it escalates and the next
// model call is answered by the plugin. Tools move the fake clock: no sleep.
func TestTurnBudgetInTime(t *testing.T) {
	var clk *registrytest.FakeClock
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		clk.Advance(25 * time.Second) // a slow model...
		return loopForever(req)
	}, breaker.WithTurnBudget(0, time.Minute))
	clk = e.clk
	evs := e.mustTurn("loop")
	// Model calls at 0s (→25s), 25s (→50s), 50s (→75s); the tool after the
	// third sees 75s ≥ 60s and escalates; the fourth call is answered.
	if calls := e.llm.Calls(); calls != 3 {
		t.Fatalf("LLM calls = %d, want 3", calls)
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndTimeBudget) {
		t.Fatalf("ended by %q, final %q", r, finalText(evs))
	}
	if !escalated(evs) || !strings.Contains(finalText(evs), "time allowed") {
		t.Fatalf("escalated=%v final=%q", escalated(evs), finalText(evs))
	}
	e.assertNoPending()
}

// TestTurnBudgetStopsALoopAgent: inside a LoopAgent whose worker calls a
// tool and answers, iteration after iteration, the budget ends the loop with
// the plugin's answer and no error: the tool call that spent the budget
// escalates. A worker that only ever answers in text gives the plugin no
// tool call to escalate on: the plugin's final answer escalates instead, and
// the loop ends on it with no error (see also loopend_test.go).
func TestTurnBudgetStopsALoopAgent(t *testing.T) {
	run := func(t *testing.T, step scripted.Step, wantErr error) (*callbacks.Handler, *scripted.Model, []*session.Event) {
		h, err := breaker.NewHandler(breaker.WithTurnBudget(5, 0))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := breaker.FromHandler(h, "")
		lookup, _ := functiontool.New(functiontool.Config{Name: "lookup", Description: "x"},
			func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil })
		llm := scripted.New("s", step)
		evs, gotErr := runLoop(t, p, llm, lookup)
		if !errors.Is(gotErr, wantErr) {
			t.Fatalf("run error = %v, want %v", gotErr, wantErr)
		}
		return h, llm, evs
	}
	t.Run("tool calls", func(t *testing.T) {
		h, llm, evs := run(t, func(req *model.LLMRequest) *model.LLMResponse {
			if scripted.LastResponses(req) != nil {
				return scripted.Text("partial result")
			}
			return scripted.CallTools(scripted.Call{Name: "lookup"})
		}, nil)
		// Calls 1 (tool), 2 (text), 3 (tool), 4 (text), 5 (tool: spends the
		// budget, escalates), 6 answered by the plugin; the loop exits.
		if llm.Calls() != 5 {
			t.Fatalf("LLM calls = %d, want 5", llm.Calls())
		}
		if r := endedBy(evs); r != "model_call_budget" || !strings.Contains(finalText(evs), "steps and time allowed") {
			t.Fatalf("ended by %q: %q", r, finalText(evs))
		}
		if tk, inv := h.Pending(); tk != 0 || inv != 0 {
			t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
		}
	})
	t.Run("text only", func(t *testing.T) {
		h, llm, evs := run(t, func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("again") }, nil)
		if llm.Calls() != 5 || endedBy(evs) != "model_call_budget" {
			t.Fatalf("LLM calls = %d, ended by %q", llm.Calls(), endedBy(evs))
		}
		if tk, inv := h.Pending(); tk != 0 || inv != 0 {
			t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
		}
	})
}

// TestTurnBudgetValidation: negative budgets fail at construction, listed
// with every other problem.
func TestTurnBudgetValidation(t *testing.T) {
	_, err := breaker.New(breaker.WithTurnBudget(-1, -time.Second), breaker.WithTurnLimit(-1))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"max_model_calls: must be ≥ 0, got -1", "max_turn_duration: must be ≥ 0, got -1s", "turn_limit: must be ≥ 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
