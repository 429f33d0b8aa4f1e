package callbacks

import (
	"errors"
	"reflect"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/observe"
)

// Token accounting: the turn budget in tokens (Config.MaxTurnTokens) and the
// outage cost (CostObserver).
//
// AfterModel adds the usage metadata of every complete model response to
// the root turn's entry in the ledger (a sub-run behind an agent tool
// counts in its root's, chain.go), with what the response says about the
// model call: a failover, a stall, no endpoint available. BeforeModel ends
// the turn at the next model call once the budget is spent; the root run's
// AfterRun reports the turn's cost and releases the entry with the rest of
// the invocation's state. Nothing of this runs on the tool path.

// Marks of a turn's ledger entry (degrade.Usage.Marks).
const (
	markFailover uint32 = 1 << iota
	markStall
	markUnavailable
)

// Response metadata keys written by package failover (failover.AttrFailoverFrom,
// AttrFailoverReason, AttrUnavailable), which imports this package; a test
// of package breaker checks that they agree.
const (
	metaFailoverFrom   = "adkbreaker.model.failover_from"
	metaFailoverReason = "adkbreaker.model.failover_reason"
	metaUnavailable    = "adkbreaker.model.unavailable"
	reasonStall        = "stall" // failover.ReasonStall
)

// CostObserver is implemented by Observers that also want what each root
// turn cost in tokens (see observe.CostObserver).
type CostObserver = observe.CostObserver

// TurnCostEvent describes one root turn's cost.
type TurnCostEvent = observe.TurnCostEvent

// TurnEndTokenBudget: the turn's model responses reported MaxTurnTokens.
const TurnEndTokenBudget = observe.TurnEndTokenBudget

// countsTokens reports whether AfterModel counts tokens.
func (h *Handler) countsTokens() bool { return h.maxTokens > 0 || h.costObs != nil }

// countTokens adds a complete model response's tokens and marks to its
// root turn. Partial (streamed) responses are skipped: ADK's final
// aggregated response carries the call's usage.
func (h *Handler) countTokens(ctx agent.CallbackContext, resp *model.LLMResponse) {
	if resp == nil || resp.Partial {
		return
	}
	n := UsageTokens(resp.UsageMetadata)
	marks := responseMarks(resp.CustomMetadata)
	inv, _ := chainOf(ctx, ctx.InvocationID())
	h.ledger.AddTokens(inv, n, marks, h.clock.Now())
}

// UsageTokens is the number of tokens a model response's usage metadata
// reports: TotalTokenCount, or else the sum of the prompt, tool-use prompt,
// candidates and thoughts counts. Nil or negative counts are 0.
func UsageTokens(u *genai.GenerateContentResponseUsageMetadata) int64 {
	if u == nil {
		return 0
	}
	if u.TotalTokenCount > 0 {
		return int64(u.TotalTokenCount)
	}
	var n int64
	for _, c := range [...]int32{u.PromptTokenCount, u.ToolUsePromptTokenCount, u.CandidatesTokenCount, u.ThoughtsTokenCount} {
		if c > 0 {
			n += int64(c)
		}
	}
	return n
}

// responseMarks reads what a failover model wrote in a response's
// metadata.
func responseMarks(md map[string]any) uint32 {
	if len(md) == 0 {
		return 0
	}
	var m uint32
	if _, ok := md[metaFailoverFrom]; ok {
		m |= markFailover
	}
	if v := reflect.ValueOf(md[metaFailoverReason]); v.Kind() == reflect.String && v.String() == reasonStall {
		m |= markStall
	}
	if b, _ := md[metaUnavailable].(bool); b {
		m |= markUnavailable
	}
	return m
}

// turnCost reports the cost of a root run's turn to the CostObserver.
// Called by AfterRun before the ledger entry is released.
func (h *Handler) turnCost(ctx agent.InvocationContext, inv string) {
	if _, f := chainOf(ctx, inv); f != nil {
		return // a sub-run: its tokens are its root's
	}
	u, ok := h.ledger.UsageOf(inv)
	if !ok {
		return
	}
	h.costObs.TurnCost(ctx, TurnCostEvent{
		InvocationID: inv,
		Tokens:       u.Tokens,
		ShortCircuit: u.Total > 0 || u.Marks&markUnavailable != 0,
		Failover:     u.Marks&markFailover != 0,
		Stall:        u.Marks&markStall != 0,
	})
}

// costGate is implemented by an Observer that forwards TurnCost to others
// (a fan-out) and may have none that wants it: the handler then does not
// count tokens for it.
type costGate interface{ WantsTurnCost() bool }

// costObserverOf returns o as a CostObserver, or nil when it is none or a
// fan-out whose members want no turn costs.
func costObserverOf(o Observer) CostObserver {
	co, ok := o.(CostObserver)
	if !ok {
		return nil
	}
	if g, ok := o.(costGate); ok && !g.WantsTurnCost() {
		return nil
	}
	return co
}

// OnModelError marks the root turn as having met a stall when a model call
// ended because its endpoint stalled after its first chunk
// (observe.ErrModelStall; a stall before it fails over, and the answering
// response says so). It changes nothing: it always returns (nil, nil), so
// the error goes on as it is.
func (h *Handler) OnModelError(ctx agent.CallbackContext, _ *model.LLMRequest, err error) (*model.LLMResponse, error) {
	if err != nil && h.countsTokens() && errors.Is(err, observe.ErrModelStall) {
		inv, _ := chainOf(ctx, ctx.InvocationID())
		h.ledger.AddTokens(inv, 0, markStall, h.clock.Now())
	}
	return nil, nil
}
