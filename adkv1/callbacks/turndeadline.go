package callbacks

import (
	"context"
	"errors"
	"time"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// errTurnDeadline is the cancellation cause of the turn's deadline
// (Config.MaxTurnDuration) on a guarded call's context.
var errTurnDeadline = errors.New("adkbreaker: the turn's time is up")

// turnLeft returns the time left in the turn of ctx's invocation, by the
// registry's clock, when the handler has a turn budget in time and the
// invocation's clock has started (BeforeRun, or its first model call).
func (h *Handler) turnLeft(ctx agent.ToolContext) (time.Duration, bool) {
	key, _ := chainOf(ctx, ctx.InvocationID()) // a sub-run's turn is its root's: one deadline clock per root turn
	u, ok := h.ledger.UsageOf(key)
	if !ok || u.Started.IsZero() {
		return 0, false
	}
	return h.maxDur - h.clock.Now().Sub(u.Started), true
}

// runInTurn runs a guarded call whose context carries the turn's deadline,
// left from now (and the dependency's CallTimeout, when it has one). A call
// the turn's deadline cut — or that would start past it — is excluded
// (the dependency is not to blame), its result is the turn-deadline note,
// and its call escalates: the next model call is answered by BeforeModel
// with the turn budget's final answer.
func (g *GuardedTool) runInTurn(ctx agent.ToolContext, args any, bd *binding, left time.Duration) (map[string]any, registry.Outcome, error) {
	if left <= 0 {
		return g.h.turnCut(ctx, bd), registry.Excluded, nil
	}
	tctx, cancel := context.WithTimeoutCause(ctx, left, errTurnDeadline)
	defer cancel()
	tc := &deadlineToolContext{toolContext: ctx, ctx: tctx}
	var res map[string]any
	var o registry.Outcome
	var err error
	if bd.callTimeout > 0 {
		res, o, err = g.runTimed(tc, args, bd)
	} else {
		res, err = g.inner.Run(tc, args)
		o = g.h.judge(tc, nil, bd, err)
	}
	if err != nil && context.Cause(tctx) == errTurnDeadline && ctx.Err() == nil {
		return g.h.turnCut(ctx, bd), registry.Excluded, nil
	}
	return res, o, err
}

// turnCut is the result of a call the turn's deadline cut: the note, and
// an escalation so that a LoopAgent stops too.
func (h *Handler) turnCut(ctx agent.ToolContext, bd *binding) map[string]any {
	ctx.Actions().Escalate = true
	return degrade.TurnDeadlineNote(bd.tool)
}
