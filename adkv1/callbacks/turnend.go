package callbacks

import (
	"sync"
	"sync/atomic"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"
)

// OnEvent is the runner's on-event callback (the plugin registers it). It
// sets Escalate on the final answer with which the handler ended a turn
// (a budget spent, the short-circuit limit reached, or no model endpoint
// left), so that an enclosing LoopAgent, which stops only on an escalating
// event, exits after that answer instead of running its sub-agents again.
// Without it a worker that only answers in text, or only calls tool names
// that do not exist, gives the handler no tool call to escalate on, and
// every later model call of the invocation would fail with ErrTurnEnded,
// iteration after iteration, for as long as the consumer keeps reading.
//
// The event is changed in place (ADK's LoopAgent checks the same event
// after the runner's callbacks ran) and OnEvent returns (nil, nil); any
// other event is left alone, at the cost of one map lookup.
func (h *Handler) OnEvent(_ agent.InvocationContext, ev *session.Event) (*session.Event, error) {
	if ev == nil || ev.Actions.Escalate || len(ev.CustomMetadata) == 0 {
		return nil, nil
	}
	if m, ok := ev.CustomMetadata["adkbreaker"].(map[string]any); ok && m["ended_turn"] == true {
		ev.Actions.Escalate = true
	}
	return nil, nil
}

// turnEnds remembers, per run (a root invocation, or a sub-run behind an
// agent tool), the final answer with which the handler ended its turn and
// which agents — by name and branch — have read it, until the run's
// AfterRun. A model call of the ended turn from an agent that has not read
// the answer yet (a sibling branch of a ParallelAgent, the next sub-agent
// of a SequentialAgent, the next node of an ADK v2 graph workflow) is
// answered with the same final answer: the run ends on the plugin's answer
// instead of failing with ErrTurnEnded (which a ParallelAgent, or a graph
// workflow's node, turns into a failed run).
//
// An agent that already read it is answered with it again, up to
// maxFinalReads reads in all: an ADK v2 graph workflow whose edges loop
// back to a node runs that node again, and the graph's own routing, not the
// plugin, decides when the loop ends (a workflow ignores Escalate); a
// LoopAgent stops on the escalating answer (OnEvent). Past maxFinalReads
// the call gets ErrTurnEnded, so that a loop that never leaves — a graph
// routing back until the model says something it never will, a LoopAgent
// without the plugin's OnEvent — cannot spin on final answers.
//
// An end that covers only one branch (the repeated-call guard ended a
// ParallelAgent branch's loop) is remembered for that agent and branch
// only: the siblings go on. Once the whole run ends, an agent that read its
// branch's end reads the run's final answer from then on (its reads count
// together).
type turnEnds struct {
	n  atomic.Int64 // runs held
	mu sync.Mutex
	m  map[string]*turnEnd
}

type turnEnd struct {
	resp  *model.LLMResponse // the final answer of a whole-run end; nil while only branches ended
	whole bool
	read  map[string]*finalRead // by reader key (readerOf): the readers of a final answer
}

// finalRead is what one reader (an agent in a branch) read of an ended
// turn: the final answer, and how many times.
type finalRead struct {
	resp *model.LLMResponse
	n    int
}

// maxFinalReads bounds how many times one agent, in one branch, reads an
// ended turn's final answer (see turnEnds): enough for a graph workflow
// that loops back to the agent a bounded number of times, few enough that
// a loop that never leaves stops on ErrTurnEnded at once.
const maxFinalReads = 16

// readerOf names the agent and branch of ctx.
func readerOf(ctx agent.ReadonlyContext) string { return ctx.AgentName() + "\x00" + ctx.Branch() }

// end records that run rk.Run's turn ended (whole) or that the branch of
// ctx's agent ended, with resp, the final answer ctx's agent reads now.
func (e *turnEnds) end(ctx agent.ReadonlyContext, rk runKey, whole bool, resp *model.LLMResponse) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]*turnEnd{}
	}
	te := e.m[rk.Run]
	if te == nil {
		te = &turnEnd{read: map[string]*finalRead{}}
		e.m[rk.Run] = te
		e.n.Add(1)
	}
	if whole && !te.whole {
		te.whole, te.resp = true, resp
	}
	who := readerOf(ctx)
	if r := te.read[who]; r != nil {
		r.resp, r.n = resp, r.n+1
		return
	}
	te.read[who] = &finalRead{resp: resp, n: 1}
}

// check answers a model call of run from ctx's agent: the final answer it
// read again when that agent (in its branch) already read one — the whole
// run's once the run ended, even when the agent read its branch's end
// before — and ErrTurnEnded once it read maxFinalReads final answers; the
// run's final answer when the whole run ended; done is false otherwise (the
// call goes on).
func (e *turnEnds) check(ctx agent.ReadonlyContext, run string) (resp *model.LLMResponse, err error, done bool) {
	if e.n.Load() == 0 {
		return nil, nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	te := e.m[run]
	if te == nil {
		return nil, nil, false
	}
	who := readerOf(ctx)
	if r := te.read[who]; r != nil {
		if r.n >= maxFinalReads {
			return nil, ErrTurnEnded, true
		}
		r.n++
		if te.whole {
			r.resp = te.resp // a branch's end read before the whole run ended: the run's answer now
		}
		return cloneFinal(r.resp), nil, true
	}
	if !te.whole {
		return nil, nil, false
	}
	te.read[who] = &finalRead{resp: te.resp, n: 1}
	return cloneFinal(te.resp), nil, true
}

// release drops run's record (its AfterRun).
func (e *turnEnds) release(run string) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	if _, ok := e.m[run]; ok {
		delete(e.m, run)
		e.n.Add(-1)
	}
	e.mu.Unlock()
}

func (e *turnEnds) len() int { return int(e.n.Load()) }

// cloneFinal copies a final answer made by finalResponse: ADK and the
// OnEvent callback write to the response they are given.
func cloneFinal(r *model.LLMResponse) *model.LLMResponse {
	text := ""
	if r.Content != nil && len(r.Content.Parts) > 0 {
		text = r.Content.Parts[0].Text
	}
	reason := ""
	if m, ok := r.CustomMetadata["adkbreaker"].(map[string]any); ok {
		reason, _ = m["reason"].(string)
	}
	return finalResponse(text, reason)
}
