package callbacks

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/repeatguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The repeated-call guard ("doom loop"): within one root turn and loop
// scope (loopScope: a ParallelAgent branch), the N-th call of one tool
// with the same canonical arguments is answered with a note
// (degrade.RepeatNote) instead of running the tool again, and the next one
// ends the run: its call escalates and the following model call is
// answered by BeforeModel with a final answer (TurnEndRepeatedCall).
// Calls are counted where the model lists them, in AfterModel (every call
// of a response, parallel ones included); a call the breaker refuses, or
// whose outcome it counts as a failure, is taken back out of the count
// (it is the breaker's: docs/design.md, "One answer per call"). A call
// that is not the first of its kind in the turn is marked for BeforeTool,
// which answers it once it reaches the limit, unless the breaker refuses
// it (then the breaker's payload answers). The tool path itself pays one
// atomic load while no call is marked.

// DefaultRepeatLimit is the N of the repeated-call guard when
// Config.RepeatLimit is 0.
const DefaultRepeatLimit = 3

// NoRepeatLimit turns the repeated-call guard off: as Config.RepeatLimit
// for every tool, as Dependency.RepeatLimit for a dependency's tools, as a
// value of Config.ToolRepeatLimits for one tool (a polling tool, say). The
// configuration file's -1 (config.NoRepeatLimit).
const NoRepeatLimit = config.NoRepeatLimit

// MaxRepeatLimit is the largest repeat limit (calls are counted in 16 bits).
const MaxRepeatLimit = config.MaxRepeatLimit

// The configuration file's bound is the table's: a count of 16 bits.
var _ = [1]struct{}{}[MaxRepeatLimit-(repeatguard.CountMask-1)]

// checkRepeatLimit validates a repeat limit: NoRepeatLimit, 0 (inherit)
// or in [2, MaxRepeatLimit] (a limit of 1 would refuse every first call).
func checkRepeatLimit(n int) error {
	if n == NoRepeatLimit || n == 0 || n >= 2 && n <= MaxRepeatLimit {
		return nil
	}
	return fmt.Errorf("must be %d (off), 0 (inherit) or in [2, %d], got %d", NoRepeatLimit, MaxRepeatLimit, n)
}

// repeatLimitOf resolves the repeat limit of a tool: its own, its
// dependency's, the handler's; 0 when the guard is off for it.
func repeatLimitOf(def int, tools map[string]int, dep int, tool string) int {
	n := def
	if dep != 0 {
		n = dep
	}
	if t, ok := tools[tool]; ok && t != 0 {
		n = t
	}
	if n < 0 {
		return 0
	}
	return n
}

// runOf returns the run key of ctx.
func runOf(ctx agent.ReadonlyContext) runKey {
	return runKey{Run: ctx.InvocationID(), Branch: ctx.Branch()}
}

// loopScope names the loop a call belongs to within its root turn: the
// ParallelAgent branches it runs in (ADK's Branch: a ParallelAgent's
// sub-agents are independent), those of the agent tool's caller first for
// a sub-run (f). The depth of a chain is not part of it: sub-runs of one
// caller, and an agent-tool cycle, count as one loop; sub-runs of parallel
// callers do not.
func loopScope(ctx agent.ReadonlyContext, f *chainFrame) string {
	b := ctx.Branch()
	switch {
	case f == nil:
		return b
	case b == "":
		return f.scope
	}
	return f.scope + "\x00" + b
}

// repeatEnds holds the runs whose turn the guard ended, until BeforeModel
// answers (or AfterRun releases them).
type repeatEnds struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[runKey]repeatEnd
}

type repeatEnd struct {
	tool  string
	dep   registry.Key
	calls int
}

func (e *repeatEnds) put(k runKey, r repeatEnd) {
	e.mu.Lock()
	if e.m == nil {
		e.m = map[runKey]repeatEnd{}
	}
	if _, ok := e.m[k]; !ok {
		e.m[k] = r
		e.n.Add(1)
	}
	e.mu.Unlock()
}

func (e *repeatEnds) take(k runKey) (repeatEnd, bool) {
	if e.n.Load() == 0 {
		return repeatEnd{}, false
	}
	e.mu.Lock()
	r, ok := e.m[k]
	if ok {
		delete(e.m, k)
		e.n.Add(-1)
	}
	e.mu.Unlock()
	return r, ok
}

// release drops every end held for run (any branch): its AfterRun.
func (e *repeatEnds) release(run string) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	for k := range e.m {
		if k.Run == run {
			delete(e.m, k)
			e.n.Add(-1)
		}
	}
	e.mu.Unlock()
}

func (e *repeatEnds) len() int { return int(e.n.Load()) }

// countCalls counts every function call of a model response in the root
// turn's counts and marks those that are not the first of their kind (a
// count of 2 or more: every repeat limit is at least 2) for BeforeTool.
// It runs on the model path, once per response.
func (h *Handler) countCalls(ctx agent.CallbackContext, resp *model.LLMResponse) {
	if h.repeats == nil || resp == nil || resp.Partial || resp.Content == nil {
		return
	}
	rk := runOf(ctx)
	inv, f := chainOf(ctx, rk.Run)
	// The calls of this run's previous response have all been dispatched by
	// now: a mark still held is a call that never ran. Dropping it keeps
	// marks short-lived, and with them the window in which BeforeTool
	// hashes calls and takes the marks' lock. Only this branch's: a busy
	// sibling branch's responses leave this one's marks alone.
	h.marks.Release(rk)
	var scope string
	var now time.Time
	for _, p := range resp.Content.Parts {
		fc := p.FunctionCall
		if fc == nil || fc.Name == "" {
			continue
		}
		if now.IsZero() {
			scope, now = loopScope(ctx, f), h.clock.Now()
		}
		hs := repeatguard.CallHash(scope, repeatguard.ToolHash(fc.Name), fc.Args)
		if n := h.repeats.Add(inv, hs, now); n >= 2 {
			h.marks.Put(rk, hs, n)
		}
	}
}

// AfterModel counts the calls of a model response for the repeated-call
// guard (countCalls). It changes nothing: it always returns (nil, nil), so
// later plugins and the agent's own callbacks still run.
func (h *Handler) AfterModel(ctx agent.CallbackContext, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	if err == nil {
		defer func() { _ = recover() }() // a fault here must not fail the model call
		if h.countsTokens() {
			h.countTokens(ctx, resp) // tokens.go
		}
		h.countCalls(ctx, resp)
	}
	return nil, nil
}

// takeRepeat returns the count with which the model's response marked this
// call (countCalls) as a repeat, 0 when it did not, and removes the mark.
func (h *Handler) takeRepeat(ctx agent.ToolContext, bd *binding, args map[string]any) int {
	rk := runOf(ctx)
	_, f := chainOf(ctx, rk.Run)
	n, _ := h.marks.Take(rk, repeatguard.CallHash(loopScope(ctx, f), bd.toolHash, args))
	return n
}

// uncountCall takes a call the breaker refused or counted as a failure
// back out of its turn's repeat count (repeatTurns.uncount).
func (h *Handler) uncountCall(ctx agent.ToolContext, bd *binding, args any) {
	if h.repeats == nil || bd == nil || bd.repeat <= 0 {
		return
	}
	defer func() { _ = recover() }() // never fail the call for the guard's sake
	m, _ := args.(map[string]any)
	inv, f := chainOf(ctx, ctx.InvocationID())
	h.repeats.Uncount(inv, repeatguard.CallHash(loopScope(ctx, f), bd.toolHash, m))
}

// repeatAnswer answers a call the model's response marked with count n, at
// or past the tool's repeat limit, and that the breaker admits (a call the
// breaker refuses is answered by the breaker: its payload says more). nil:
// the call goes on (shadow mode).
func (h *Handler) repeatAnswer(ctx agent.ToolContext, bd *binding, n int) map[string]any {
	// Calls count in the root's turn (a sub-agent repeating itself across
	// sub-runs is one loop); the turn that ends is the run's own (and the
	// branch's own), so that its caller can still answer (chain.go).
	rk := runOf(ctx)
	inv, _ := chainOf(ctx, rk.Run)
	ends := n > bd.repeat
	if bd.shadow {
		// Shadow mode changes nothing the model reads: count, do not act.
		if ro, ok := h.obs.(RepeatObserver); ok {
			ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv, Shadow: true})
		}
		return nil
	}
	if ends {
		h.repeatEnded.put(rk, repeatEnd{tool: bd.tool, dep: bd.key, calls: n})
		ctx.Actions().Escalate = true // a LoopAgent exits after this call
	}
	if ro, ok := h.obs.(RepeatObserver); ok {
		ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv})
	}
	if h.outage(inv, bd) {
		// Its dependency was unavailable in this turn: the note must not
		// invite another try with other arguments.
		return degrade.RepeatNoteOutage(bd.tool, n-1, ends)
	}
	return degrade.RepeatNote(bd.tool, n-1, ends)
}

// outage reports whether bd's dependency was refused in turn inv, or its
// breaker is not closed now.
func (h *Handler) outage(inv string, bd *binding) bool {
	if bd.key == "" {
		return false
	}
	if bd.br != nil && bd.br.State() != registry.StateClosed {
		return true
	}
	return h.ledger.Count(inv, string(bd.key)) > 0
}

// endRepeated ends the run rk (in the root turn inv) after the guard's last
// note: a final answer that says the request could not be completed and,
// when dependencies were unavailable in the turn, which and when to try
// again. A run inside a ParallelAgent's branch ends only that branch: its
// siblings are not looping.
func (h *Handler) endRepeated(ctx agent.CallbackContext, inv string, rk runKey, r repeatEnd) *model.LLMResponse {
	u, _ := h.ledger.UsageOf(inv)
	items := h.unavailableIn(inv)
	text := degrade.RepeatedCallMessageDuring(r.tool, items)
	resp := finalResponse(text, string(TurnEndRepeatedCall))
	h.ends.end(ctx, rk, rk.Branch == "", resp)
	if rk.Branch == "" {
		h.ledger.End(rk.Run, h.clock.Now())
	}
	if h.obs != nil {
		h.obs.TurnEnded(ctx, TurnEndEvent{InvocationID: inv, Reason: TurnEndRepeatedCall, TurnTotal: u.Total, ModelCalls: u.ModelCalls})
	}
	return resp
}

// Hashing. callHash hashes (loop scope, tool, canonical arguments); the
// arguments are canonical in key order (the pairs of a map are combined
// by a commutative sum, so no keys are sorted and nothing allocates), in
// number forms (every number is hashed by its exact value: an integer as
// that integer, whatever its type or form — 3, 3.0, int64(3),
// json.Number("3e0") are one value, and 2^54+1 is never 2^54 —, any other
// number as the float64 encoding/json decodes it to; -0 is 0) and in
// Unicode forms (strings and keys in NFC, without default-ignorable code
// points: "Café" composed or decomposed, or with a zero-width space, soft
// hyphen, word joiner or BOM inside, is one string).

func anyRepeatLimit(deps map[registry.Key]Dependency) bool {
	for _, d := range deps {
		if d.RepeatLimit > 0 {
			return true
		}
	}
	return false
}

// runKey names one run's marks and end: its invocation ID and its branch
// (the sub-agents of a ParallelAgent share their invocation ID, and each
// runs its own loop).
type runKey = repeatguard.RunKey

// ArgsHash returns the canonical hash of a call's arguments that the
// repeated-call guard uses (the process's seed): equal for arguments that
// differ only in key order, number form or Unicode normal form. For tests
// and tools.
func ArgsHash(args map[string]any) uint64 { return repeatguard.ArgsHash(args) }
