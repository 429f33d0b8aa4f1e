package callbacks

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/registry"
)

// GuardedTool is a function tool whose executions the Handler can see: its
// Run tells the handler that the tool really ran (an agent's own before-tool
// callback that refused the call, or answered it from a cache, never reaches
// Run), records the tool's own result before any callback can change it,
// and applies the dependency's Policy.CallTimeout to the context the tool
// runs with. Only outcomes of calls that really ran count for the breaker.
//
// It keeps the tool's name, description, declaration and long-running flag,
// reports the tool's DependencyKey (if any), and Unwrap returns the tool
// itself, so mappings by name or glob, DependencyKey resolution and
// callbacks keyed by name see no difference.
//
// The plugin guards every protected function tool of each model request by
// itself (see Config.NoAutoGuard); Handler.Guard and Handler.GuardToolset
// are for agents that do not run the handler's BeforeModel.
type GuardedTool struct {
	inner runnableTool
	h     *Handler
	// bd is the tool's binding once BeforeTool (or BeforeModel, when it was
	// cached already) resolved it: bindings never change, so the calls of
	// this GuardedTool skip the resolver's lookup by name.
	bd atomic.Pointer[binding]
}

// runnableTool is ADK's function-tool method set (toolinternal.FunctionTool).
type runnableTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx agent.ToolContext, args any) (map[string]any, error)
}

// streamingTool is ADK's streaming function tool: it runs with no tool
// callbacks at all, so guarding it would mark nothing.
type streamingTool interface {
	RunStream(ctx agent.ToolContext, args any) iter.Seq2[string, error]
}

var (
	_ runnableTool    = (*GuardedTool)(nil)
	_ DependencyKeyer = (*GuardedTool)(nil)
)

// Guard returns t guarded by h (see GuardedTool), or t itself when it cannot
// or need not be guarded: not a function tool, a streaming tool, or already
// guarded by h. Put the result in llmagent.Config.Tools in place of t.
func (h *Handler) Guard(t tool.Tool) tool.Tool {
	if g, ok := t.(*GuardedTool); ok && g.h == h {
		return t
	}
	rt, ok := t.(runnableTool)
	if !ok {
		return t
	}
	if _, ok := t.(streamingTool); ok {
		return t
	}
	return &GuardedTool{inner: rt, h: h}
}

// GuardToolset returns ts with every tool it lists guarded by h.
func (h *Handler) GuardToolset(ts tool.Toolset) tool.Toolset {
	if ts == nil {
		return nil
	}
	return &guardedToolset{Toolset: ts, h: h}
}

type guardedToolset struct {
	tool.Toolset
	h *Handler
}

func (s *guardedToolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	ts, err := s.Toolset.Tools(ctx)
	if err != nil {
		return ts, err
	}
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		out[i] = s.h.Guard(t)
	}
	return out, nil
}

// ProcessRequest passes the request to the toolset's own ProcessRequest,
// where it has one (ADK runs it for every toolset of an agent that
// implements it, e.g. ADK v2's skill toolset); otherwise it does nothing,
// as ADK does for a toolset without it.
func (s *guardedToolset) ProcessRequest(ctx agent.ToolContext, req *model.LLMRequest) error {
	rp, ok := s.Toolset.(interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	})
	if !ok {
		return nil
	}
	return rp.ProcessRequest(ctx, req)
}

// Unwrap returns the toolset inside.
func (s *guardedToolset) Unwrap() tool.Toolset { return s.Toolset }

// Unwrap returns the guarded tool.
func (g *GuardedTool) Unwrap() tool.Tool { return g.inner }

// Unwrap returns the tool inside a GuardedTool (inside every GuardedTool,
// when one handler's guard guards another's), or t itself.
func Unwrap(t tool.Tool) tool.Tool {
	for {
		g, ok := t.(*GuardedTool)
		if !ok {
			return t
		}
		t = g.inner
	}
}

// Name returns the tool's name.
func (g *GuardedTool) Name() string { return g.inner.Name() }

// Description returns the tool's description.
func (g *GuardedTool) Description() string { return g.inner.Description() }

// IsLongRunning returns the tool's flag.
func (g *GuardedTool) IsLongRunning() bool { return g.inner.IsLongRunning() }

// Declaration returns the tool's declaration.
func (g *GuardedTool) Declaration() *genai.FunctionDeclaration { return g.inner.Declaration() }

// DependencyKey returns the tool's DependencyKey, or "" when it has none.
func (g *GuardedTool) DependencyKey() string {
	if dk, ok := g.inner.(DependencyKeyer); ok {
		return dk.DependencyKey()
	}
	return ""
}

// DisplayResultOnSkipSummarization delegates to the tool (ADK's agent tool
// implements it).
func (g *GuardedTool) DisplayResultOnSkipSummarization() bool {
	d, ok := g.inner.(interface{ DisplayResultOnSkipSummarization() bool })
	return ok && d.DisplayResultOnSkipSummarization()
}

// DefersResponse delegates to the tool. ADK v2 asks it of the tool a call
// ran (toolinternal.ResponseDeferrer): a tool that defers its response and
// returns no result gets no function response from the flow (ADK v2's task
// agent tool, whose response the task sub-agent gives). ADK v1 does not ask.
func (g *GuardedTool) DefersResponse() bool {
	d, ok := g.inner.(interface{ DefersResponse() bool })
	return ok && d.DefersResponse()
}

// ProcessRequest declares the tool to the model as itself, so that ADK
// dispatches calls (and passes the tool to callbacks) as this GuardedTool:
// the tool's own ProcessRequest runs, then its entry in req.Tools is
// replaced by g.
func (g *GuardedTool) ProcessRequest(ctx agent.ToolContext, req *model.LLMRequest) error {
	rp, ok := g.inner.(interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	})
	if !ok {
		return packTool(req, g)
	}
	if err := rp.ProcessRequest(ctx, req); err != nil {
		return err
	}
	if req.Tools != nil && req.Tools[g.Name()] != nil {
		req.Tools[g.Name()] = g
		return nil
	}
	return packTool(req, g)
}

// packTool registers t in req.Tools and appends its declaration to the
// request's function-declarations tool, as ADK's internal packing does.
func packTool(req *model.LLMRequest, t runnableTool) error {
	if req.Tools == nil {
		req.Tools = make(map[string]any)
	}
	if cur, ok := req.Tools[t.Name()]; ok && cur != any(t) {
		return errors.New("duplicate tool: " + t.Name())
	}
	req.Tools[t.Name()] = t
	decl := t.Declaration()
	if decl == nil {
		return nil
	}
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = append(gt.FunctionDeclarations, decl)
			return nil
		}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{decl}})
	return nil
}

// errCallTimeout is the cancellation cause of Policy.CallTimeout.
var errCallTimeout = errors.New("adkbreaker: tool call timeout")

// Run runs the tool (under the dependency's CallTimeout, if set) and
// reports its own outcome to the breaker before any callback sees it,
// marking the call as really run.
//
// A call BeforeTool found admissible (the breaker closed, a bulkhead slot
// free) is admitted here, right before the tool runs: the reservation lives
// on Run's stack and is reported exactly once when the tool returns (or
// panics), so the closed path touches no shared table. The breaker has the
// last word: a trip or a full bulkhead since BeforeTool refuses the call
// here with the same model-readable payload BeforeTool would have returned.
// Calls BeforeTool admitted itself (half-open probes, calls that waited for
// a bulkhead slot) are finished from the pending table, as are calls whose
// dependency client consults Registry.Admitted (an MCP tool of mcpguard).
func (g *GuardedTool) Run(ctx agent.ToolContext, args any) (map[string]any, error) {
	h := g.h
	bd := g.bd.Load() // set by BeforeTool (or BeforeModel) before the call
	if bd == nil {
		// The handler's BeforeTool never saw this tool (it binds it first
		// thing), so none of its callbacks will see this call: an agent
		// without them, or a runner whose plugin is another handler's (that
		// one admits and counts the call). Nothing is admitted or refused
		// here; the tool runs untracked, under its CallTimeout.
		if bd = h.res.lookupTool(g.inner); bd == nil || bd.br == nil {
			return g.inner.Run(ctx, args)
		}
		res, _, err := g.exec(ctx, args, bd)
		return res, err
	}
	if bd.br == nil {
		return g.inner.Run(ctx, args) // no breaker: nothing was admitted
	}
	call := ctx.FunctionCallID()
	if s := h.tix.shard(call); !s.empty() {
		if f, found := s.flagsOf(ctx); found {
			if f&flagShadow != 0 { // a shadow-mode refusal BeforeTool observed: untracked
				return g.runShadow(ctx, args, bd, true)
			}
			return g.runPending(ctx, args, bd)
		}
	}
	var r registry.Reservation
	if !bd.br.TryReserve(&r) {
		tk, d := bd.br.Reserve()
		switch {
		case d.Shadow:
			h.observeShadow(ctx, bd, d, ctx.InvocationID())
			return g.runShadow(ctx, args, bd, false)
		case !d.Allowed:
			m, _ := args.(map[string]any)
			return h.shortCircuit(ctx, bd, d, m), nil
		}
		r = tk
	}
	if bd.br.SelfAdmitting() {
		// The tool's client asks Registry.Admitted whether the call is
		// admitted (mcpguard): the handler's Admission must find it.
		if !h.tix.put(ctx, call, ctx.InvocationID(), r, bd, flagGuarded) {
			r.Report(registry.Excluded, 0) // already pending: never track a call twice
		}
		return g.runPending(ctx, args, bd)
	}
	return g.runAdmitted(ctx, args, bd, &r)
}

// runShadow runs, untracked, a call a shadow-mode breaker would have
// refused (the would-be refusal is observed already). marked says whether
// BeforeTool left a flagShadow marker for it. A client that consults
// Registry.Admitted (mcpguard) finds the marker while the tool runs, so that
// it neither admits the call nor counts a second shadow refusal for it.
func (g *GuardedTool) runShadow(ctx agent.ToolContext, args any, bd *binding, marked bool) (map[string]any, error) {
	h, call := g.h, ctx.FunctionCallID()
	if !bd.br.SelfAdmitting() {
		if marked {
			h.tix.take(ctx, call)
		}
		res, _, err := g.exec(ctx, args, bd)
		return res, err
	}
	if !marked {
		marked = h.tix.put(ctx, call, ctx.InvocationID(), registry.Reservation{}, bd, flagGuarded|flagShadow)
	}
	res, _, err := g.exec(ctx, args, bd)
	if marked {
		h.tix.take(ctx, call)
	}
	return res, err
}

// runAdmitted runs a call Run admitted into r and reports its outcome. A
// panicking tool's call is released as Excluded (freeing its bulkhead slot,
// and a probe's lease) before the panic goes on.
func (g *GuardedTool) runAdmitted(ctx agent.ToolContext, args any, bd *binding, r *registry.Reservation) (res map[string]any, err error) {
	h := g.h
	co := h.callObs
	var start time.Time
	if co != nil { // the clock is read only for an observer that wants durations
		start = h.clock.Now()
	}
	reported := false
	defer func() {
		if !reported {
			r.Report(registry.Excluded, 0)
		}
	}()
	var o registry.Outcome
	if bd.callTimeout > 0 || h.maxDur > 0 {
		res, o, err = g.exec(ctx, args, bd)
	} else { // exec, by hand: one frame less on the closed path
		res, err = g.inner.Run(ctx, args)
		o = h.judge(ctx, nil, bd, err)
	}
	reported = true
	if o == registry.Failure && bd.repeat > 0 {
		h.uncountCall(ctx, bd, args) // its retries are the breaker's to stop, not the repeat guard's
	}
	if err != nil {
		r.Report(o, RetryHint(err))
		// OnToolError and AfterTool compare what they are shown with the
		// tool's own error (see AfterTool).
		h.tix.putErred(ctx, ctx.FunctionCallID(), ctx.InvocationID(), bd)
	} else {
		r.Report(o, 0)
		h.ranOK(ctx, bd, o, args, res)
	}
	if co != nil {
		h.callEnded(ctx, co, bd, o, start)
	}
	return res, err
}

// ranOK stores a guarded tool's own successful result in the last-good
// cache (whatever a callback makes of it later), when its dependency keeps
// one.
func (h *Handler) ranOK(ctx agent.ToolContext, bd *binding, o registry.Outcome, args any, res map[string]any) {
	if o == registry.Success && bd.lastGood != nil && res != nil {
		m, _ := args.(map[string]any)
		h.storeLastGood(ctx, bd, m, res)
	}
}

// callEnded tells the call observer how a guarded call that reached its
// tool ended.
func (h *Handler) callEnded(ctx context.Context, co CallObserver, bd *binding, o registry.Outcome, start time.Time) {
	co.CallEnded(ctx, CallEvent{Dependency: bd.key, Tool: bd.tool, Outcome: o, Duration: h.clock.Now().Sub(start)})
}

// runPending runs a call whose admission is in the pending table and
// reports its outcome there.
//
// The pending entry is touched once, after the tool returned: nothing reads
// the ran mark before (OnToolError and AfterTool follow Run). A call whose
// tool did not err is reported and removed there at once (its own result
// goes to the last-good cache from here, as in runAdmitted), so AfterTool
// finds nothing to do.
//
// A panicking tool's call is taken out of the table and released as
// Excluded before the panic goes on, as runAdmitted does: its probe or
// bulkhead slot is not held until AfterRun (which agent-level use of the
// callbacks never has).
func (g *GuardedTool) runPending(ctx agent.ToolContext, args any, bd *binding) (map[string]any, error) {
	h := g.h
	co := h.callObs
	var start time.Time
	if co != nil {
		start = h.clock.Now()
	}
	returned := false
	defer func() {
		if !returned {
			tk, _ := h.tix.take(ctx, ctx.FunctionCallID())
			tk.Report(registry.Excluded, 0)
		}
	}()
	res, o, err := g.exec(ctx, args, bd)
	returned = true
	var hint time.Duration
	if err != nil {
		hint = RetryHint(err) // and the entry stays: AfterTool compares what it is shown with the tool's error
	}
	ran := h.tix.ran(ctx, ctx.FunctionCallID(), o, hint, err != nil)
	if ran && o == registry.Failure && bd.repeat > 0 {
		h.uncountCall(ctx, bd, args)
	}
	if ran && err == nil {
		h.ranOK(ctx, bd, o, args, res)
	}
	if ran && co != nil {
		h.callEnded(ctx, co, bd, o, start)
	}
	return res, err
}

// exec runs the tool, under the turn's deadline (MaxTurnDuration;
// turndeadline.go) and the dependency's CallTimeout when they are set, and
// judges its outcome.
func (g *GuardedTool) exec(ctx agent.ToolContext, args any, bd *binding) (map[string]any, registry.Outcome, error) {
	if g.h.maxDur > 0 {
		if left, ok := g.h.turnLeft(ctx); ok {
			return g.runInTurn(ctx, args, bd, left)
		}
	}
	if bd.callTimeout > 0 {
		return g.runTimed(ctx, args, bd)
	}
	res, err := g.inner.Run(ctx, args)
	return res, g.h.judge(ctx, nil, bd, err), err
}

// runTimed runs the tool under the dependency's CallTimeout and judges its
// outcome (before the timeout's context is cancelled: judge reads its cause).
func (g *GuardedTool) runTimed(ctx agent.ToolContext, args any, bd *binding) (map[string]any, registry.Outcome, error) {
	dctx, cancel := context.WithTimeoutCause(ctx, bd.callTimeout, errCallTimeout)
	defer cancel()
	base := ctx
	if d, ok := ctx.(*deadlineToolContext); ok {
		base = d.toolContext // the turn's deadline is in ctx, hence in dctx: one wrapper, not two
	}
	res, err := g.inner.Run(&deadlineToolContext{toolContext: base, ctx: dctx}, args)
	return res, g.h.judge(ctx, dctx, bd, err), err
}

// binding returns the GuardedTool's binding, resolving it (and creating its
// breaker) on first use.
func (g *GuardedTool) binding() *binding {
	if bd := g.bd.Load(); bd != nil {
		return bd
	}
	bd := g.h.res.bind(g)
	g.bd.Store(bd)
	return bd
}

// judge classifies the outcome of a guarded call: our CallTimeout is a
// failure (even when a tool that ignores its context succeeds after it),
// anything after the caller's own cancellation is excluded — a success too:
// a tool may return nil when it sees its context done, and such a "success"
// must never close a half-open breaker — and anything else is classified as
// usual.
func (h *Handler) judge(ctx, dctx context.Context, bd *binding, err error) registry.Outcome {
	switch {
	case dctx != nil && context.Cause(dctx) == errCallTimeout:
		return registry.Failure
	case ctx.Err() != nil:
		return registry.Excluded
	case err == nil:
		return registry.Success
	}
	return h.classify(ctx, bd, err)
}

// deadlineToolContext is a tool context whose context.Context part carries
// a deadline of ours; every other method (state, actions, artifacts, IDs)
// is the call's own tool context, so the tool's effects land where ADK
// expects them.
type deadlineToolContext struct {
	toolContext
	ctx context.Context
}

// toolContext names the embedded tool context: its field name is then the
// same on every ADK line (ADK v2 calls the type agent.Context).
type toolContext = agent.ToolContext

func (c *deadlineToolContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *deadlineToolContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *deadlineToolContext) Err() error                  { return c.ctx.Err() }
func (c *deadlineToolContext) Value(key any) any           { return c.ctx.Value(key) }

// guardRequest replaces every protected function tool of req by its
// GuardedTool (BeforeModel runs after ADK registered the request's tools and
// before it builds the tool table it dispatches calls from).
func (h *Handler) guardRequest(req *model.LLMRequest) {
	for name, v := range req.Tools {
		t, ok := v.(tool.Tool)
		if !ok {
			continue
		}
		if h.agentGuard {
			if at := h.agentToolFor(t); at != nil { // ADK's agent tool: its sub-agent runs protected (chain.go)
				req.Tools[name] = at
				if !h.res.mapped(at.Name()) {
					continue // not a dependency of its own (see resolver.mapped)
				}
				t = at
			}
		}
		if !h.autoGuard {
			continue
		}
		if g, ok := t.(*GuardedTool); ok && g.h == h {
			continue
		}
		// Another handler's guard is guarded again: that handler's callbacks
		// do not see this run (its Run runs the tool untracked), ours must
		// know that the tool really ran.
		bd, protected, _ := h.res.protection(t)
		if !protected {
			continue
		}
		if g := h.Guard(t); g != t {
			if gt, ok := g.(*GuardedTool); ok && bd != nil {
				gt.bd.Store(bd) // already resolved: the call skips the lookup
			}
			req.Tools[name] = g
		}
	}
}
