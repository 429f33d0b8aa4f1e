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
	"github.com/adkbreaker/adkbreaker/degrade"
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
//	         independent: no repeat across them; chained workers share
//	         one loop, and a 2nd identical call is still below N)
//	refusal  the same, crm-api isolated: each refusal counts once in the
//	         root turn, however deep (H is workers+1: a refusal counted
//	         twice would end the turn)
//	repeat   each worker calls lookup with the same arguments forever: in
//	         each loop two calls run, the 3rd is noted, the 4th ends that
//	         loop (one end observed per loop); chained workers are one
//	         loop, whose end ends the run: the next worker reads the
//	         plugin's answer; the run never fails
//	limit    a worker calls the isolated lookup forever: H ends the turn
//	         with the plugin's answer; in parallel branches the other
//	         workers, whose next model call comes after the end, read the
//	         plugin's answer too; the run never fails
//	deadline as once, with a turn budget in time: every call runs with the
//	         turn's deadline in its context, however deep
//	shadow   as refusal, crm-api's breaker in shadow mode: every call runs,
//	         each would-be refusal is observed once (as a shadow one), and
//	         the model reads nothing of the plugin
//
// In every cell the run ends without an error, the registry holds crm-api's
// breaker alone (an agent, or a tool ADK installs itself, is no dependency),
// and nothing per invocation is left behind.
//
// Shapes (both lines): an LlmAgent, a SequentialAgent, a LoopAgent, a
// ParallelAgent of four workers, agent tools 1–4 deep, and an agent-tool
// cycle (X calls Y, Y calls X, which works). Each line adds its own
// (extraShapes): ADK v2's task-mode and single_turn sub-agents and graph
// workflows (guardmatrix_shapes_adkv2_test.go).
func TestGuardMatrix(t *testing.T) {
	shapes := append(baseShapes(), extraShapes()...)
	guards := []string{"once", "refusal", "repeat", "limit", "deadline", "shadow"}
	for _, g := range guards {
		for _, s := range shapes {
			t.Run(g+"/"+s.name, func(t *testing.T) { runMatrixCell(t, g, s) })
		}
	}
}

// matrixShape is one agent shape of the matrix.
type matrixShape struct {
	name string
	// workers is the number of agents that call lookup (k.worker(i) for i
	// in [0, workers)). Each runs in a loop scope of its own (a parallel
	// branch), unless chained: then they run one after the other in one
	// loop scope (a graph workflow's chain).
	workers int
	chained bool
	build   func(k *matrixKit) agent.Agent
}

// matrixKit is what a shape builds its agents from.
type matrixKit struct {
	t      *testing.T
	guard  string
	obs    *matrixObserver
	lookup tool.Tool
}

// call is a fresh response each time: ADK writes call IDs into it.
func (k *matrixKit) call() *model.LLMResponse {
	return scripted.CallTools(scripted.Call{Name: "lookup", Args: map[string]any{"company": "gold price today"}})
}

// worker returns the step of worker i: it answers with answer (nil: the
// text "done") once its call ran, as the guard says.
func (k *matrixKit) worker(i int, answer func() *model.LLMResponse) scripted.Step {
	if answer == nil {
		answer = func() *model.LLMResponse { return scripted.Text("done") }
	}
	var n atomic.Int64
	return func(*model.LLMRequest) *model.LLMResponse {
		switch c := n.Add(1); {
		case k.guard != "repeat" && k.guard != "limit":
			if c == 1 {
				return k.call()
			}
			return answer()
		case k.guard == "limit" && i > 0 && c == 1:
			<-k.obs.ended // a sibling's next model call comes after the turn ended
			return k.call()
		}
		return k.call() // repeat, limit: forever
	}
}

// agent returns an LLM agent named name whose model follows step.
func (k *matrixKit) agent(name string, step scripted.Step, tools ...tool.Tool) agent.Agent {
	a, err := llmagent.New(llmagent.Config{Name: name, Description: name + " agent", Model: scripted.New(name, step).WithoutLog(), Tools: tools})
	if err != nil {
		k.t.Fatal(err)
	}
	return a
}

// caller calls the tool next with a request once, then answers.
func caller(next string) scripted.Step {
	return chainStep(next, map[string]any{"request": "work"}, false)
}

// baseShapes are the shapes both ADK lines have.
func baseShapes() []matrixShape {
	workflow := func(kind string, workers int) func(k *matrixKit) agent.Agent {
		return func(k *matrixKit) agent.Agent {
			var subs []agent.Agent
			for i := range workers {
				subs = append(subs, k.agent(fmt.Sprintf("worker%d", i), k.worker(i, nil), k.lookup))
			}
			cfg := agent.Config{Name: kind, SubAgents: subs}
			var root agent.Agent
			var err error
			switch kind {
			case "sequential":
				root, err = sequentialagent.New(sequentialagent.Config{AgentConfig: cfg})
			case "loop":
				root, err = loopagent.New(loopagent.Config{AgentConfig: cfg, MaxIterations: 3})
			default:
				root, err = parallelagent.New(parallelagent.Config{AgentConfig: cfg})
			}
			if err != nil {
				k.t.Fatal(err)
			}
			return root
		}
	}
	shapes := []matrixShape{
		{name: "llm", workers: 1, build: func(k *matrixKit) agent.Agent { return k.agent("worker", k.worker(0, nil), k.lookup) }},
		{name: "sequential", workers: 1, build: workflow("sequential", 1)},
		{name: "loop", workers: 1, build: workflow("loop", 1)},
		{name: "parallel", workers: 4, build: workflow("parallel", 4)},
	}
	for depth := 1; depth <= 4; depth++ {
		shapes = append(shapes, matrixShape{name: fmt.Sprintf("tool%d", depth), workers: 1, build: func(k *matrixKit) agent.Agent {
			next := k.agent("worker", k.worker(0, nil), k.lookup)
			for d := depth - 1; d >= 0; d-- {
				name := fmt.Sprintf("level%d", d)
				if d == 0 {
					name = "root"
				}
				next = k.agent(name, caller(next.Name()), agenttool.New(next, nil))
			}
			return next
		}})
	}
	return append(shapes, matrixShape{name: "cycle", workers: 1, build: func(k *matrixKit) agent.Agent {
		// X at the root calls Y, Y calls X, and X called with "work" works.
		var x agent.Agent
		y, err := llmagent.New(llmagent.Config{Name: "y", Description: "y agent", Model: scripted.New("y", caller("x")).WithoutLog(),
			Toolsets: []tool.Toolset{&lazyToolset{tools: func() []tool.Tool { return []tool.Tool{agenttool.New(x, nil)} }}}})
		if err != nil {
			k.t.Fatal(err)
		}
		w := k.worker(0, nil)
		toY := chainStep("y", map[string]any{"request": "hop"}, false)
		x = k.agent("x", func(req *model.LLMRequest) *model.LLMResponse {
			if firstUserText(req) == "work" {
				return w(req)
			}
			return toY(req)
		}, k.lookup, agenttool.New(y, nil))
		return x
	}})
}

// matrixObserver counts short-circuits and ended turns, and closes ended
// at the first ended turn.
type matrixObserver struct {
	shorts  atomic.Int64 // refusals (not in shadow mode)
	shadows atomic.Int64 // would-be refusals in shadow mode
	repeats atomic.Int64 // repeat notes the model read (in any run of the chain)
	turns   atomic.Int64
	once    sync.Once
	ended   chan struct{}
}

func (o *matrixObserver) ShortCircuit(_ context.Context, ev callbacks.ShortCircuitEvent) {
	if ev.Shadow {
		o.shadows.Add(1)
		return
	}
	o.shorts.Add(1)
}
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

func runMatrixCell(t *testing.T, guard string, shape matrixShape) {
	workers := shape.workers
	obs := &matrixObserver{ended: make(chan struct{})}
	opts := []breaker.Option{
		breaker.WithClock(registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))),
		breaker.WithDependency("crm-api", "lookup"),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}),
		breaker.WithObserver(obs),
	}
	switch guard {
	case "refusal":
		opts = append(opts, breaker.WithTurnLimit(workers+1))
	case "deadline":
		opts = append(opts, breaker.WithTurnBudget(0, time.Hour))
	case "shadow":
		opts = append(opts, breaker.WithPolicy("crm-api", registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true}))
	}
	h, err := breaker.NewHandler(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if guard == "refusal" || guard == "limit" || guard == "shadow" {
		if err := h.Registry().Isolate("crm-api"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	var depCalls, deadlines atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look something up."},
		func(ctx agent.ToolContext, _ struct {
			Company string `json:"company"`
		}) (map[string]any, error) {
			depCalls.Add(1)
			if d, ok := ctx.Deadline(); ok && time.Until(d) <= time.Hour {
				deadlines.Add(1)
			}
			return map[string]any{"answer": "42"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	root := shape.build(&matrixKit{t: t, guard: guard, obs: obs, lookup: lookup})
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
		loops := workers
		if shape.chained {
			loops = 1 // the first worker's loop ends the run
		}
		if depCalls.Load() != int64(2*loops) || obs.repeats.Load() != int64(2*loops) || obs.turns.Load() != int64(loops) {
			t.Fatalf("lookup ran %d times, %d notes, %d ends, for %d loops: want 2 runs, 2 notes and 1 end per loop", depCalls.Load(), obs.repeats.Load(), obs.turns.Load(), loops)
		}
		if shape.chained && (!endedTurn(evs) || !strings.Contains(finalText(evs), "lookup")) {
			t.Fatalf("turn ended %v, final %q: want the repeat end's answer naming lookup", endedTurn(evs), finalText(evs))
		}
	case "limit":
		if !endedTurn(evs) || !strings.Contains(finalText(evs), "crm-api") {
			t.Fatalf("turn ended %v, final %q: want the plugin's answer naming crm-api", endedTurn(evs), finalText(evs))
		}
		if depCalls.Load() != 0 {
			t.Fatalf("lookup ran %d times while isolated", depCalls.Load())
		}
	case "deadline":
		if depCalls.Load() != int64(workers) || deadlines.Load() != int64(workers) || endedTurn(evs) {
			t.Fatalf("lookup ran %d times for %d workers, %d with the turn's deadline, ended %v: want every call to run with it", depCalls.Load(), workers, deadlines.Load(), endedTurn(evs))
		}
	case "shadow":
		if depCalls.Load() != int64(workers) || obs.shadows.Load() != int64(workers) || obs.shorts.Load() != 0 || notes != 0 || endedTurn(evs) || unavailable(evs) {
			t.Fatalf("lookup ran %d times for %d workers, %d shadow and %d real refusals, %d notes, ended %v, a payload read %v: want every call to run, each observed once in shadow mode, nothing read",
				depCalls.Load(), workers, obs.shadows.Load(), obs.shorts.Load(), notes, endedTurn(evs), unavailable(evs))
		}
	}
	// A dependency is what the tools name: an agent (behind an agent tool, a
	// task-mode or single_turn sub-agent) and ADK's own finish_task are none.
	if keys := h.Registry().Keys(); len(keys) != 1 || keys[0] != "crm-api" {
		t.Fatalf("breakers %v: want crm-api's alone (an agent or ADK's own tool is no dependency)", keys)
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
}

// unavailable reports whether the model read an unavailable payload.
func unavailable(evs []*session.Event) bool {
	for _, r := range functionResponses(evs) {
		if _, ok := degrade.Parse(r.Response); ok {
			return true
		}
	}
	return false
}

// lazyToolset returns the tools of a function called when the model
// request is built: it closes an agent-tool cycle (Y's tool is X, built
// after Y).
type lazyToolset struct{ tools func() []tool.Tool }

func (l *lazyToolset) Name() string { return "lazy" }
func (l *lazyToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	return l.tools(), nil
}
