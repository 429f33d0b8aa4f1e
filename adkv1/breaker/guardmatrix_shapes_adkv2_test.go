//go:build ignore

package breaker_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/workflow"

	"github.com/adkbreaker/adkbreaker/adkv2/internal/scripted"
)

// extraShapes are the guard matrix's shapes only ADK v2 has:
//
//	task       a root LlmAgent delegates to a task-mode sub-agent
//	           (llmagent.ModeTask: ADK installs a tool named after it; the
//	           root's call is dispatched as a workflow node in the root's
//	           invocation and branch, isolated by the call's ID), which
//	           calls lookup and finishes with finish_task
//	single     the same with a single_turn sub-agent (ModeSingleTurn: the
//	           tool runs it as a node on a sub-branch of the root's)
//	graphseq   a graph workflow (workflowagent) chaining two LlmAgent
//	           nodes: START → worker0 → worker1, one branch, one loop
//	graphpar   a graph workflow fanning out to four LlmAgent nodes that
//	           run concurrently, each on a branch of its own, joined:
//	           START → worker0..3 → join
//	graphloop  a graph workflow looping over one LlmAgent node with a
//	           conditional edge back, three times (the LoopAgent shape's
//	           MaxIterations): START → worker → again → worker …
//	dynamic    a graph workflow's dynamic node running two task-mode
//	           workers concurrently with workflow.RunNode, each on a
//	           sub-branch of its own
//
// (A chat coordinator with task sub-agents cannot be a static graph node in
// ADK v2.2.0: its delegation calls workflow.RunNode, which only a dynamic
// node's context allows.)
func extraShapes() []matrixShape {
	return []matrixShape{
		{name: "task", workers: 1, build: func(k *matrixKit) agent.Agent {
			return delegating(k, "root", modeAgent(k, "worker", llmagent.ModeTask, k.worker(0, finishTask), k.lookup))
		}},
		{name: "single", workers: 1, build: func(k *matrixKit) agent.Agent {
			return delegating(k, "root", modeAgent(k, "worker", llmagent.ModeSingleTurn, k.worker(0, nil), k.lookup))
		}},
		{name: "graphseq", workers: 2, chained: true, build: func(k *matrixKit) agent.Agent {
			return graph(k, workflow.Chain(workflow.Start, node(k, k.agent("worker0", k.worker(0, nil), k.lookup)),
				node(k, k.agent("worker1", k.worker(1, nil), k.lookup))))
		}},
		{name: "graphpar", workers: 4, build: func(k *matrixKit) agent.Agent {
			b := workflow.NewEdgeBuilder()
			join := workflow.NewJoinNode("join")
			for i := range 4 {
				n := node(k, k.agent(fmt.Sprintf("worker%d", i), k.worker(i, nil), k.lookup))
				b.Add(workflow.Start, n).Add(n, join)
			}
			return graph(k, b.Build())
		}},
		{name: "graphloop", workers: 1, build: func(k *matrixKit) agent.Agent {
			w := node(k, k.agent("worker", k.worker(0, nil), k.lookup))
			var runs atomic.Int64
			again := workflow.NewEmittingFunctionNode("again", func(ctx agent.Context, _ any, emit func(*session.Event) error) (any, error) {
				if runs.Add(1) < 3 { // three iterations, as the LoopAgent shape's MaxIterations
					ev := session.NewEvent(ctx, ctx.InvocationID())
					ev.Routes = []string{"again"}
					return nil, emit(ev)
				}
				return nil, nil
			}, workflow.NodeConfig{})
			return graph(k, workflow.Concat(workflow.Chain(workflow.Start, w, again),
				workflow.Edge{From: again, To: w, Route: workflow.StringRoute("again")}))
		}},
		{name: "dynamic", workers: 2, build: func(k *matrixKit) agent.Agent {
			var nodes []workflow.Node
			for i := range 2 {
				nodes = append(nodes, node(k, modeAgent(k, fmt.Sprintf("worker%d", i), llmagent.ModeTask, k.worker(i, finishTask), k.lookup)))
			}
			dispatch := workflow.NewDynamicNode("dispatch", func(ctx agent.Context, _ any, _ func(*session.Event) error) (any, error) {
				var wg sync.WaitGroup
				errs := make([]error, len(nodes))
				for i, n := range nodes {
					wg.Go(func() { _, errs[i] = workflow.RunNode[any](ctx, n, "work", workflow.WithUseSubBranch()) })
				}
				wg.Wait()
				return "dispatched", errors.Join(errs...)
			}, workflow.NodeConfig{})
			return graph(k, workflow.Chain(workflow.Start, dispatch))
		}},
	}
}

// finishTask is a task-mode worker's answer: it finishes its task.
func finishTask() *model.LLMResponse {
	return scripted.CallTools(scripted.Call{Name: "finish_task", Args: map[string]any{"result": "done"}})
}

// modeAgent is an LLM agent in mode.
func modeAgent(k *matrixKit, name string, mode llmagent.Mode, step scripted.Step, tools ...tool.Tool) agent.Agent {
	a, err := llmagent.New(llmagent.Config{Name: name, Description: name + " agent", Mode: mode,
		Model: scripted.New(name, step).WithoutLog(), Tools: tools})
	if err != nil {
		k.t.Fatal(err)
	}
	return a
}

// delegating is a chat-mode LLM agent named name with sub as its
// sub-agent: it calls the tool ADK installs for sub once, then answers.
func delegating(k *matrixKit, name string, sub agent.Agent) agent.Agent {
	a, err := llmagent.New(llmagent.Config{Name: name, Description: name + " agent", Mode: llmagent.ModeChat,
		Model: scripted.New(name, caller(sub.Name())).WithoutLog(), SubAgents: []agent.Agent{sub}})
	if err != nil {
		k.t.Fatal(err)
	}
	return a
}

func node(k *matrixKit, a agent.Agent) workflow.Node {
	n, err := workflow.NewAgentNode(a, workflow.NodeConfig{})
	if err != nil {
		k.t.Fatal(err)
	}
	return n
}

// graph is a graph workflow agent of edges.
func graph(k *matrixKit, edges []workflow.Edge) agent.Agent {
	wf, err := workflowagent.New(workflowagent.Config{Name: "graph", Edges: edges})
	if err != nil {
		k.t.Fatal(err)
	}
	return wf
}

// extraEndlessLoops are ADK v2's loops that never leave on their own
// (TestEndedTurnReadsAreBounded): a graph workflow routing back to its node
// forever, under the whole plugin (a workflow ignores Escalate).
func extraEndlessLoops() []endlessLoop {
	return []endlessLoop{{name: "graph looping back forever", onEvent: true, build: func(t *testing.T, worker agent.Agent) agent.Agent {
		k := &matrixKit{t: t}
		w := node(k, worker)
		again := workflow.NewEmittingFunctionNode("again", func(ctx agent.Context, _ any, emit func(*session.Event) error) (any, error) {
			ev := session.NewEvent(ctx, ctx.InvocationID())
			ev.Routes = []string{"again"}
			return nil, emit(ev)
		}, workflow.NodeConfig{})
		return graph(k, workflow.Concat(workflow.Chain(workflow.Start, w, again),
			workflow.Edge{From: again, To: w, Route: workflow.StringRoute("again")}))
	}}}
}
