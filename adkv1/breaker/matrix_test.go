package breaker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/agent/workflowagents/loopagent"
	"google.golang.org/adk/agent/workflowagents/parallelagent"
	"google.golang.org/adk/agent/workflowagents/sequentialagent"
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
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// The guard × agent shape matrix: every guard behaves as documented in
// every agent shape — counted once, in the right turn, never across
// independent branches, never failing a run the plugin meant to answer.
//
// Guards (what the workers' model does):
//
//	once     each worker calls lookup once, with the same arguments as the
//	         other workers, and answers: every call runs (branches are
//	         independent: no repeat across them)
//	refusal  the same, crm-api isolated: each refusal counts once in the
//	         root turn, however deep (H is workers+1: a refusal counted
//	         twice would end the turn)
//	repeat   each worker calls lookup with the same arguments forever: in
//	         each worker's own loop two calls run, the 3rd is noted, the
//	         4th ends that worker's run; the run never fails
//	limit    a worker calls the isolated lookup forever: H ends the turn
//	         with the plugin's answer; in a ParallelAgent the other
//	         workers, whose next model call comes after the end, read the
//	         plugin's answer too; the run never fails
//
// Shapes: an LlmAgent, a SequentialAgent, a LoopAgent, a ParallelAgent of
// four workers, agent tools 1–4 deep, and an agent-tool cycle (X calls Y,
// Y calls X, which works). ADK v2's task-mode sub-agents and graph
// workflows are not covered here.
func TestGuardMatrix(t *testing.T) {
	shapes := []string{"llm", "sequential", "loop", "parallel", "tool1", "tool2", "tool3", "tool4", "cycle"}
	guards := []string{"once", "refusal", "repeat", "limit"}
	for _, g := range guards {
		for _, s := range shapes {
			t.Run(g+"/"+s, func(t *testing.T) { runMatrixCell(t, g, s) })
		}
	}
}

// matrixObserver counts short-circuits and ended turns, and closes ended
// at the first ended turn.
type matrixObserver struct {
	shorts  atomic.Int64
	repeats atomic.Int64 // repeat notes the model read (in any run of the chain)
	turns   atomic.Int64
	once    sync.Once
	ended   chan struct{}
}

func (o *matrixObserver) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) { o.shorts.Add(1) }
func (o *matrixObserver) RepeatedCall(_ context.Context, ev callbacks.RepeatEvent) {
	if !ev.Shadow {
		o.repeats.Add(1)
	}
}
func (o *matrixObserver) TurnEnded(context.Context, callbacks.TurnEndEvent) {
	o.turns.Add(1)
	o.once.Do(func() { close(o.ended) })
}

// firstUserText is the text of a request's first user content: the
// request an agent tool passed to its sub-agent, or the user's message.
func firstUserText(req *model.LLMRequest) string {
	for _, c := range req.Contents {
		if c != nil && c.Role == genai.RoleUser {
			for _, p := range c.Parts {
				if p.Text != "" {
					return p.Text
				}
			}
		}
	}
	return ""
}

func runMatrixCell(t *testing.T, guard, shape string) {
	workers := 1
	if shape == "parallel" {
		workers = 4
	}
	obs := &matrixObserver{ended: make(chan struct{})}
	opts := []breaker.Option{
		breaker.WithClock(registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))),
		breaker.WithDependency("crm-api", "lookup"),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}),
		breaker.WithObserver(obs),
	}
	if guard == "refusal" {
		opts = append(opts, breaker.WithTurnLimit(workers+1))
	}
	h, err := breaker.NewHandler(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if guard == "refusal" || guard == "limit" {
		if err := h.Registry().Isolate("crm-api"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	var depCalls atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look something up."},
		func(ctx agent.ToolContext, _ struct {
			Company string `json:"company"`
		}) (map[string]any, error) {
			depCalls.Add(1)
			return map[string]any{"answer": "42"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// call is a fresh response each time: ADK writes call IDs into it.
	call := func() *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "lookup", Args: map[string]any{"company": "gold price today"}})
	}
	// worker returns the step of worker i.
	worker := func(i int) scripted.Step {
		n := 0
		return func(*model.LLMRequest) *model.LLMResponse {
			n++
			switch {
			case guard == "once" || guard == "refusal":
				if n == 1 {
					return call()
				}
				return scripted.Text("done")
			case guard == "limit" && i > 0 && n == 1:
				<-obs.ended // a sibling's next model call comes after the turn ended
				return call()
			}
			return call() // repeat, limit: forever
		}
	}
	mk := func(name string, step scripted.Step, tools ...tool.Tool) agent.Agent {
		a, err := llmagent.New(llmagent.Config{Name: name, Description: name + " agent", Model: scripted.New(name, step).WithoutLog(), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// caller calls the agent tool next with a request once, then answers.
	caller := func(next string) scripted.Step {
		return chainStep(next, map[string]any{"request": "work"}, false)
	}
	var root agent.Agent
	switch shape {
	case "llm":
		root = mk("worker", worker(0), lookup)
	case "sequential", "loop", "parallel":
		var subs []agent.Agent
		for i := range workers {
			subs = append(subs, mk(fmt.Sprintf("worker%d", i), worker(i), lookup))
		}
		cfg := agent.Config{Name: shape, SubAgents: subs}
		switch shape {
		case "sequential":
			root, err = sequentialagent.New(sequentialagent.Config{AgentConfig: cfg})
		case "loop":
			root, err = loopagent.New(loopagent.Config{AgentConfig: cfg, MaxIterations: 3})
		default:
			root, err = parallelagent.New(parallelagent.Config{AgentConfig: cfg})
		}
		if err != nil {
			t.Fatal(err)
		}
	case "tool1", "tool2", "tool3", "tool4":
		depth := int(shape[4] - '0')
		next := mk("worker", worker(0), lookup)
		for d := depth - 1; d >= 0; d-- {
			name := fmt.Sprintf("level%d", d)
			if d == 0 {
				name = "root"
			}
			next = mk(name, caller(next.Name()), agenttool.New(next, nil))
		}
		root = next
	case "cycle":
		// X at the root calls Y, Y calls X, and X called with "work" works.
		var x agent.Agent
		y, err := llmagent.New(llmagent.Config{Name: "y", Description: "y agent", Model: scripted.New("y", caller("x")).WithoutLog(),
			Toolsets: []tool.Toolset{&lazyToolset{tools: func() []tool.Tool { return []tool.Tool{agenttool.New(x, nil)} }}}})
		if err != nil {
			t.Fatal(err)
		}
		w := worker(0)
		toY := chainStep("y", map[string]any{"request": "hop"}, false)
		x = mk("x", func(req *model.LLMRequest) *model.LLMResponse {
			if firstUserText(req) == "work" {
				return w(req)
			}
			return toY(req)
		}, lookup, agenttool.New(y, nil))
		root = x
	}
	r, err := runner.New(runner.Config{AppName: "matrix", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*session.Event
	var runErr error
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil && runErr == nil {
			runErr = err
		}
		if ev != nil {
			evs = append(evs, ev)
		}
		if len(evs) > 500 {
			t.Fatal("the run does not end")
		}
	}
	if runErr != nil {
		t.Fatalf("the run failed: %v", runErr)
	}
	notes := len(notes(evs))
	switch guard {
	case "once":
		if depCalls.Load() != int64(workers) || notes != 0 || endedTurn(evs) {
			t.Fatalf("lookup ran %d times for %d workers, %d notes, ended %v: want every worker's call to run", depCalls.Load(), workers, notes, endedTurn(evs))
		}
	case "refusal":
		if obs.shorts.Load() != int64(workers) || endedTurn(evs) || obs.turns.Load() != 0 {
			t.Fatalf("%d short-circuits observed for %d workers, turn ended %v: a refusal counted more than once", obs.shorts.Load(), workers, endedTurn(evs))
		}
	case "repeat":
		if depCalls.Load() != int64(2*workers) || obs.repeats.Load() != int64(2*workers) {
			t.Fatalf("lookup ran %d times, %d notes, for %d workers: want 2 runs and 2 notes per worker", depCalls.Load(), obs.repeats.Load(), workers)
		}
	case "limit":
		if !endedTurn(evs) || !strings.Contains(finalText(evs), "crm-api") {
			t.Fatalf("turn ended %v, final %q: want the plugin's answer naming crm-api", endedTurn(evs), finalText(evs))
		}
		if depCalls.Load() != 0 {
			t.Fatalf("lookup ran %d times while isolated", depCalls.Load())
		}
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
}

// lazyToolset returns the tools of a function called when the model
// request is built: it closes an agent-tool cycle (Y's tool is X, built
// after Y).
type lazyToolset struct{ tools func() []tool.Tool }

func (l *lazyToolset) Name() string { return "lazy" }
func (l *lazyToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	return l.tools(), nil
}
