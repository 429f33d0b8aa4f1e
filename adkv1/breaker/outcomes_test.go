package breaker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/plugin/retryandreflect"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// Modes of the in-process "lookup" tool.
const (
	toolUp      int32 = iota // answers
	toolDown                 // fails with HTTP 503
	toolLimited              // fails with HTTP 429, Retry-After 120s
	toolHang                 // waits for its context to end
)

// toolAgent is one agent with one in-process function tool, "lookup", on the
// dependency "lookup-api", run by the real ADK runner.
type toolAgent struct {
	t    *testing.T
	clk  *registrytest.FakeClock
	h    *callbacks.Handler
	reg  *registry.Registry
	r    *runner.Runner
	mode atomic.Int32
	ran  atomic.Int64 // executions of the tool's function
	n    atomic.Int64
	// seenDeadline is the deadline the tool's context had on its last run.
	seenDeadline atomic.Pointer[time.Time]
}

type toolAgentSetup struct {
	// agent adjusts the agent's configuration (agent-level callbacks).
	agent func(h *callbacks.Handler, c *llmagent.Config)
	// ahead are plugins registered before adkbreaker (against the docs).
	ahead []*adkplugin.Plugin
	// noPlugin runs the handler only through the agent's callbacks.
	noPlugin bool
	// clock, if set, replaces the fake clock (synctest uses the system clock).
	systemClock bool
}

func newToolAgent(t *testing.T, s toolAgentSetup, opts ...breaker.Option) *toolAgent {
	t.Helper()
	a := &toolAgent{t: t, clk: registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))}
	base := []breaker.Option{
		breaker.WithDependency("lookup-api", "lookup"),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}),
	}
	if !s.systemClock {
		base = append(base, breaker.WithClock(a.clk))
	}
	h, err := breaker.NewHandler(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	a.h, a.reg = h, h.Registry()
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look a record up."},
		func(ctx agent.ToolContext, _ struct{}) (map[string]any, error) {
			a.ran.Add(1)
			if d, ok := ctx.Deadline(); ok {
				a.seenDeadline.Store(&d)
			}
			switch a.mode.Load() {
			case toolDown:
				return nil, &callbacks.StatusError{Code: 503}
			case toolLimited:
				return nil, &callbacks.StatusError{Code: 429, RetryAfter: 120 * time.Second}
			case toolHang:
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return map[string]any{"record": "r1"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	cfg := llmagent.Config{Name: "lookup_agent", Model: scripted.New("scripted", callOnce("lookup", nil)).WithoutLog(), Tools: []tool.Tool{lookup}}
	if s.agent != nil {
		s.agent(h, &cfg)
	}
	ag, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plugins := append([]*adkplugin.Plugin(nil), s.ahead...)
	if !s.noPlugin {
		p, err := breaker.FromHandler(h, "")
		if err != nil {
			t.Fatal(err)
		}
		plugins = append(plugins, p)
	}
	a.r, err = runner.New(runner.Config{AppName: "outcomes", Agent: ag, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// turn runs one user turn and returns the tool's response.
func (a *toolAgent) turn() map[string]any {
	a.t.Helper()
	n := a.n.Add(1)
	var evs []*session.Event
	for ev, err := range a.r.Run(a.t.Context(), "u", "s"+string(rune('a'+n%26))+time.Duration(n).String(), genai.NewContentFromText("x", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			a.t.Fatalf("turn: %v", err)
		}
		evs = append(evs, ev)
	}
	rs := functionResponses(evs)
	if len(rs) == 0 {
		a.t.Fatal("no tool response")
	}
	if tk, inv := a.h.Pending(); tk != 0 || inv != 0 {
		a.t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
	return rs[0].Response
}

func (a *toolAgent) breaker() *registry.Breaker {
	b, ok := a.reg.Lookup("lookup-api")
	if !ok {
		a.t.Fatal("no breaker")
	}
	return b
}

// trip opens the breaker with failing calls, then lets its hold expire.
func (a *toolAgent) tripAndExpire() {
	a.t.Helper()
	a.mode.Store(toolDown)
	for range 3 {
		a.turn()
	}
	if st := a.breaker().State(); st != registry.StateOpen {
		a.t.Fatalf("state after 3 failures = %v, want open", st)
	}
	a.clk.Advance(31 * time.Second)
	if st := a.breaker().State(); st != registry.StateHalfOpen {
		a.t.Fatalf("state after the hold = %v, want half_open", st)
	}
}

var errForbidden = errors.New("permission denied for this user")

// refuse is an agent's own before-tool callback that refuses every call.
func refuse(agent.ToolContext, tool.Tool, map[string]any) (map[string]any, error) {
	return nil, errForbidden
}

// fromCache is an agent's own before-tool callback that answers every call.
func fromCache(agent.ToolContext, tool.Tool, map[string]any) (map[string]any, error) {
	return map[string]any{"record": "cached"}, nil
}

// TestAgentRefusalIsNotCharged: an agent's own before-tool callback that
// refuses calls (a permission check) is never charged to the dependency: one
// user's refusals must not open the breaker for every user.
func TestAgentRefusalIsNotCharged(t *testing.T) {
	a := newToolAgent(t, toolAgentSetup{agent: func(_ *callbacks.Handler, c *llmagent.Config) {
		c.BeforeToolCallbacks = []llmagent.BeforeToolCallback{refuse}
	}})
	for range 10 {
		if got := a.turn(); !strings.Contains(got["error"].(string), "permission denied") {
			t.Fatalf("response = %v, want the refusal", got)
		}
	}
	b := a.breaker()
	if st, c := b.State(), b.Counts(); st != registry.StateClosed || c.Failures != 0 || c.Successes != 0 {
		t.Fatalf("state %v, counts %+v: refusals were charged to the dependency", st, c)
	}
	if a.ran.Load() != 0 {
		t.Fatalf("the tool ran %d times", a.ran.Load())
	}
}

// TestCachedAnswerCannotCloseHalfOpen: a callback that answers a call from a
// cache is not the dependency's success: it must not close a half-open
// breaker (no probe reached the dependency), and it must not hold the probe
// slot either.
func TestCachedAnswerCannotCloseHalfOpen(t *testing.T) {
	var cache atomic.Bool
	a := newToolAgent(t, toolAgentSetup{agent: func(_ *callbacks.Handler, c *llmagent.Config) {
		c.BeforeToolCallbacks = []llmagent.BeforeToolCallback{func(ctx agent.ToolContext, tl tool.Tool, args map[string]any) (map[string]any, error) {
			if cache.Load() {
				return fromCache(ctx, tl, args)
			}
			return nil, nil
		}}
	}})
	a.tripAndExpire()
	cache.Store(true)
	ran := a.ran.Load()
	for range 3 {
		if got := a.turn(); got["record"] != "cached" {
			t.Fatalf("response = %v, want the cached answer", got)
		}
	}
	b := a.breaker()
	if st := b.State(); st != registry.StateHalfOpen || b.PendingProbes() != 0 || a.ran.Load() != ran {
		t.Fatalf("after cached answers: state %v, pending probes %d, tool runs %d: want half_open, 0, no run", st, b.PendingProbes(), a.ran.Load()-ran)
	}
	cache.Store(false)
	a.mode.Store(toolUp)
	a.turn() // a real probe
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("after a real successful probe: %v, want closed", st)
	}
}

// TestRetryAndReflectAheadCannotCloseProbe: with ADK's retryandreflect
// registered ahead of adkbreaker, tool errors reach AfterTool as successes.
// The guarded tool's own outcome is the truth: the breaker still trips, a
// failed probe re-opens it, and the mismatch is logged once and counted.
func TestRetryAndReflectAheadCannotCloseProbe(t *testing.T) {
	logs := &logCapture{}
	obs := &mismatchCounter{}
	reader := sdkmetric.NewManualReader()
	a := newToolAgent(t, toolAgentSetup{ahead: []*adkplugin.Plugin{retryandreflect.MustNew(retryandreflect.WithMaxRetries(100))}},
		breaker.WithLogger(logs.logger()), breaker.WithObserver(obs),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	a.tripAndExpire() // would never trip: AfterTool only sees reflections
	if got := a.turn(); got["response_type"] != "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN" {
		t.Fatalf("probe response = %v, want retryandreflect's reflection", got)
	}
	if st := a.breaker().State(); st != registry.StateOpen {
		t.Fatalf("after a failed probe shown as a success: %v, want open again", st)
	}
	if n := strings.Count(logs.String(), "registered ahead of adkbreaker"); n != 1 {
		t.Fatalf("mismatch logged %d times, want once:\n%s", n, logs.String())
	}
	if got := obs.n.Load(); got != 4 {
		t.Fatalf("mismatches counted = %d, want 4 (3 failures and the probe)", got)
	}
	if got := metrics(t, reader)["adkbreaker.tool.outcome_mismatches"]["dependency=lookup-api,tool=lookup"]; got != 4 {
		t.Fatalf("outcome_mismatches metric = %v, want 4", metrics(t, reader)["adkbreaker.tool.outcome_mismatches"])
	}
}

// TestIsolatedSaysNoRetryTime: an isolated dependency stays unavailable
// until an operator resets it; the payload, RetryAfter and the gauge say so
// instead of naming the policy's OpenFor.
func TestIsolatedSaysNoRetryTime(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	a := newToolAgent(t, toolAgentSetup{}, breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err := a.reg.Isolate("lookup-api"); err != nil {
		t.Fatal(err)
	}
	got := a.turn()
	info, ok := degrade.Parse(got)
	if !ok || info.Reason != degrade.ReasonIsolated || info.RetryAfterSeconds != 0 {
		t.Fatalf("payload %v → %+v, %v", got, info, ok)
	}
	if r, _ := got[degrade.KeyRetry].(map[string]any); len(r) != 1 || r["advised"] != false {
		t.Fatalf("retry = %+v, want {advised: false} and no after_seconds", got[degrade.KeyRetry])
	}
	if ra := a.breaker().RetryAfter(); ra != registry.UntilReset {
		t.Fatalf("RetryAfter = %v, want UntilReset", ra)
	}
	if g := metrics(t, reader)["adkbreaker.breaker.retry_after"]["dependency=lookup-api"]; g != -1 {
		t.Fatalf("retry_after gauge = %v, want -1", g)
	}
	a.reg.Reset("lookup-api")
	if ra := a.breaker().RetryAfter(); ra != 0 {
		t.Fatalf("RetryAfter after reset = %v", ra)
	}
}

type mismatchCounter struct{ n atomic.Int64 }

func (*mismatchCounter) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) {}
func (*mismatchCounter) TurnEnded(context.Context, callbacks.TurnEndEvent)         {}
func (m *mismatchCounter) OutcomeMismatch(context.Context, callbacks.MismatchEvent) {
	m.n.Add(1)
}

// TestExplicitGuardWithoutPlugin: an agent that uses the handler's callbacks
// directly, without the plugin and without BeforeModel, guards its tools
// with Handler.Guard and gets the same treatment of refused calls: never
// admitted, never counted.
func TestExplicitGuardWithoutPlugin(t *testing.T) {
	var deny atomic.Bool
	a := newToolAgent(t, toolAgentSetup{noPlugin: true, agent: func(h *callbacks.Handler, c *llmagent.Config) {
		for i, tl := range c.Tools {
			c.Tools[i] = h.Guard(tl)
		}
		c.BeforeToolCallbacks = []llmagent.BeforeToolCallback{h.BeforeTool, func(ctx agent.ToolContext, tl tool.Tool, args map[string]any) (map[string]any, error) {
			if deny.Load() {
				return refuse(ctx, tl, args)
			}
			return nil, nil
		}}
		c.OnToolErrorCallbacks = []llmagent.OnToolErrorCallback{h.OnToolError}
		c.AfterToolCallbacks = []llmagent.AfterToolCallback{h.AfterTool}
	}})
	deny.Store(true)
	for range 5 {
		a.turn()
	}
	if c := a.breaker().Counts(); c.Requests != 0 || c.Failures != 0 || c.Exclusions != 0 {
		t.Fatalf("counts %+v: want the 5 refused calls never admitted (a guarded call is admitted by its Run)", c)
	}
	deny.Store(false)
	a.mode.Store(toolDown)
	for range 3 {
		a.turn()
	}
	if st := a.breaker().State(); st != registry.StateOpen {
		t.Fatalf("real failures did not trip: %v", st)
	}
}

// TestUnguardedProbeIsReleasedNotDecided: with auto-guarding off and no
// explicit guard, the handler cannot tell a real execution from a callback's
// answer, so a half-open probe's outcome releases the probe without closing
// the breaker (the safe default), and says so once in the log.
func TestUnguardedProbeIsReleasedNotDecided(t *testing.T) {
	logs := &logCapture{}
	a := newToolAgent(t, toolAgentSetup{}, breaker.WithoutToolGuard(), breaker.WithLogger(logs.logger()))
	a.tripAndExpire()
	a.mode.Store(toolUp)
	a.turn()
	b := a.breaker()
	if st := b.State(); st != registry.StateHalfOpen || b.PendingProbes() != 0 {
		t.Fatalf("after an unguarded probe: %v with %d pending probes, want half_open with none", st, b.PendingProbes())
	}
	if !strings.Contains(logs.String(), "unguarded tool") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
}

// TestCallTimeoutBoundsGuardedTool: a dependency's call_timeout reaches the
// tool as its context's deadline; a tool still running at it is cancelled,
// and the timeout counts as the dependency's failure (virtual time).
func TestCallTimeoutBoundsGuardedTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newToolAgent(t, toolAgentSetup{systemClock: true}, breaker.WithPolicy("lookup-api", registry.Policy{
			ConsecutiveFailures: 2, DisableFailureRate: true, CallTimeout: 5 * time.Second, OpenFor: time.Minute}))
		a.mode.Store(toolHang)
		start := time.Now()
		got := a.turn()
		if el := time.Since(start); el != 5*time.Second {
			t.Fatalf("the call took %v, want the 5s call timeout", el)
		}
		if d := a.seenDeadline.Load(); d == nil || !d.Equal(start.Add(5*time.Second)) {
			t.Fatalf("tool's deadline = %v, want start+5s", d)
		}
		if !strings.Contains(got["error"].(string), "deadline exceeded") {
			t.Fatalf("response = %v", got)
		}
		if c := a.breaker().Counts(); c.Failures != 1 {
			t.Fatalf("counts %+v: want the timeout counted as a failure", c)
		}
		a.turn()
		if st := a.breaker().State(); st != registry.StateOpen {
			t.Fatalf("after 2 timeouts: %v, want open", st)
		}
	})
}

// TestCallerCancellationIsNotATimeout: the caller's own deadline ends the
// call before ours: excluded, not a failure.
func TestCallerCancellationIsNotATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newToolAgent(t, toolAgentSetup{systemClock: true}, breaker.WithPolicy("lookup-api", registry.Policy{CallTimeout: 5 * time.Second}))
		a.mode.Store(toolHang)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		for range a.r.Run(ctx, "u", "s", genai.NewContentFromText("x", genai.RoleUser), agent.RunConfig{}) {
		}
		if c := a.breaker().Counts(); c.Failures != 0 || c.Exclusions != 1 {
			t.Fatalf("counts %+v: want the caller's cancellation excluded", c)
		}
	})
}

// TestToolRetryAfterIsOneFailure: a tool answering one 429 with Retry-After
// among successes counts one ordinary failure: its breaker stays closed and
// the next turn's call runs (the hint is a floor for the hold once the
// breaker opens). trip_on_retry_hint: true opts in to opening at once for
// the hint.
func TestToolRetryAfterIsOneFailure(t *testing.T) {
	a := newToolAgent(t, toolAgentSetup{})
	a.turn()
	a.mode.Store(toolLimited)
	a.turn()
	b := a.breaker()
	if st, c := b.Status(), b.Counts(); st.State != registry.StateClosed || c.Failures != 1 || c.Trips != 0 {
		t.Fatalf("after one 429 with Retry-After 120s among successes: %v (cause %v, retry after %s), counts %+v; want closed, one failure",
			st.State, st.Cause, st.RetryAfter, c)
	}
	a.mode.Store(toolUp)
	if got := a.turn(); got["record"] != "r1" || a.ran.Load() != 3 {
		t.Fatalf("the next turn: %v, tool ran %d times; want the call run", got, a.ran.Load())
	}

	on := true
	opt := newToolAgent(t, toolAgentSetup{}, breaker.WithPolicy("lookup-api", registry.Policy{ConsecutiveFailures: 3, TripOnRetryHint: &on}))
	opt.mode.Store(toolLimited)
	opt.turn()
	ob := opt.breaker()
	if st, ra := ob.State(), ob.RetryAfter(); st != registry.StateOpen || ra != 120*time.Second {
		t.Fatalf("with trip_on_retry_hint: %v, retry after %v after one 429; want open for 120s", st, ra)
	}
	if got := ob.Status().Cause; got != registry.CauseRetryHint {
		t.Fatalf("cause = %v, want retry_hint", got)
	}
}

// TestGuardedToolKeepsItsIdentity: the wrapper keeps what ADK and users look
// at, and unwraps to the tool.
func TestGuardedToolKeepsItsIdentity(t *testing.T) {
	h, err := breaker.NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := functiontool.New(functiontool.Config{Name: "slow_job", Description: "Start a job.", IsLongRunning: true},
		func(agent.ToolContext, struct{}) (map[string]any, error) { return nil, nil })
	g := h.Guard(ft)
	gt, ok := g.(*callbacks.GuardedTool)
	if !ok {
		t.Fatalf("Guard returned %T", g)
	}
	if gt.Name() != "slow_job" || gt.Description() != ft.Description() || !gt.IsLongRunning() || gt.Unwrap() != ft || callbacks.Unwrap(g) != ft {
		t.Fatal("the guarded tool lost its identity")
	}
	if h.Guard(g) != g {
		t.Fatal("a guarded tool was guarded twice")
	}
}

// TestGuardKeepsLongRunningAndTransfer: on the real runner, a guarded
// long-running tool still has its call ID reported as long-running, and a
// guarded transfer_to_agent still transfers.
func TestGuardKeepsLongRunningAndTransfer(t *testing.T) {
	h, err := breaker.NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := breaker.FromHandler(h, "")
	job, _ := functiontool.New(functiontool.Config{Name: "start_job", Description: "Start a job.", IsLongRunning: true},
		func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{"job": "j1"}, nil })
	sub, err := llmagent.New(llmagent.Config{Name: "helper", Description: "Helps.",
		Model: scripted.New("sub", func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("helper here") }).WithoutLog()})
	if err != nil {
		t.Fatal(err)
	}
	rootModel := scripted.New("root", func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.CallTools(scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "helper"}})
		}
		return scripted.CallTools(scripted.Call{Name: "start_job", Args: map[string]any{}})
	})
	root, err := llmagent.New(llmagent.Config{Name: "root", Tools: []tool.Tool{job}, SubAgents: []agent.Agent{sub}, Model: rootModel})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "lr", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var longRunning []string
	var helperSpoke bool
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		longRunning = append(longRunning, ev.LongRunningToolIDs...)
		if ev.Author == "helper" && ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text == "helper here" {
			helperSpoke = true
		}
	}
	for _, name := range []string{"start_job", "transfer_to_agent"} {
		if _, ok := rootModel.Requests()[0].Tools[name].(*callbacks.GuardedTool); !ok {
			t.Fatalf("req.Tools[%s] is %T, want it guarded", name, rootModel.Requests()[0].Tools[name])
		}
	}
	if len(longRunning) == 0 {
		t.Error("the guarded long-running tool's call ID was not reported as long-running")
	}
	if !helperSpoke {
		t.Error("transfer_to_agent did not transfer")
	}
	for _, k := range []registry.Key{"start_job", "transfer_to_agent"} {
		if b, ok := h.Registry().Lookup(k); !ok || b.Counts().Successes != 1 {
			t.Errorf("breaker %q: %v, want one success counted through the guard", k, ok)
		}
	}
}

// TestAgentRecoveryIsNoMismatch: an agent's own on-tool-error callback that
// recovers an error runs after the plugin saw it: the failure counts, and
// nothing is reported as a mismatch.
func TestAgentRecoveryIsNoMismatch(t *testing.T) {
	logs := &logCapture{}
	obs := &mismatchCounter{}
	a := newToolAgent(t, toolAgentSetup{agent: func(_ *callbacks.Handler, c *llmagent.Config) {
		c.OnToolErrorCallbacks = []llmagent.OnToolErrorCallback{func(agent.ToolContext, tool.Tool, map[string]any, error) (map[string]any, error) {
			return map[string]any{"record": "fallback"}, nil
		}}
	}}, breaker.WithLogger(logs.logger()), breaker.WithObserver(obs))
	a.mode.Store(toolDown)
	if got := a.turn(); got["record"] != "fallback" {
		t.Fatalf("response = %v", got)
	}
	if c := a.breaker().Counts(); c.Failures != 1 {
		t.Fatalf("counts %+v, want the failure counted", c)
	}
	if obs.n.Load() != 0 || strings.Contains(logs.String(), "registered ahead") {
		t.Fatalf("an agent's own recovery was reported as a mismatch: %d\n%s", obs.n.Load(), logs.String())
	}
}

// TestGuardKeepsToolConfirmation: a guarded tool that requires confirmation
// still asks (the request is excluded, never a failure), and runs once the
// user confirms. ADK resumes a confirmed call from the agent's own tool list
// (unguarded): its success counts as before while the breaker is closed.
func TestGuardKeepsToolConfirmation(t *testing.T) {
	h, err := breaker.NewHandler(breaker.WithDependency("pay-api", "pay"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := breaker.FromHandler(h, "")
	var ran atomic.Int64
	pay, _ := functiontool.New(functiontool.Config{Name: "pay", Description: "Pay an invoice.", RequireConfirmation: true},
		func(agent.ToolContext, struct{}) (map[string]any, error) {
			ran.Add(1)
			return map[string]any{"paid": true}, nil
		})
	ag, err := llmagent.New(llmagent.Config{Name: "payer", Tools: []tool.Tool{pay},
		Model: scripted.New("m", callOnce("pay", map[string]any{})).WithoutLog()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "conf", Agent: ag, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var confirmID string
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("pay it", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, part := range ev.Content.Parts {
			if fc := part.FunctionCall; fc != nil && fc.Name == "adk_request_confirmation" {
				confirmID = fc.ID
			}
		}
	}
	b, _ := h.Registry().Lookup("pay-api")
	if confirmID == "" || ran.Load() != 0 {
		t.Fatalf("confirmation request %q, tool runs %d: want a request and no run", confirmID, ran.Load())
	}
	if c := b.Counts(); c.Failures != 0 || c.Exclusions != 1 {
		t.Fatalf("counts %+v: want the confirmation request excluded", c)
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: confirmID, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": true}}}}}
	for _, err := range r.Run(t.Context(), "u", "s", answer, agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ran.Load() != 1 {
		t.Fatalf("tool runs after confirmation = %d, want 1", ran.Load())
	}
	if c := b.Counts(); c.Successes != 1 || c.Failures != 0 {
		t.Fatalf("counts %+v after the confirmed run", c)
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
	}
}

// String returns everything captured so far.
func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// TestForeignGuardCountedOnce: an agent's tools guarded explicitly by one
// handler, run by a plugin built from another handler on the same registry
// (breaker.New with WithRegistry instead of FromHandler). The plugin admits
// and counts each call (the guard is not its own); the guard's handler never
// saw the call, so its Run must neither admit nor count it again, and must
// leave nothing behind in its handler.
func TestForeignGuardCountedOnce(t *testing.T) {
	var guard *callbacks.Handler
	a := newToolAgent(t, toolAgentSetup{agent: func(h *callbacks.Handler, c *llmagent.Config) {
		var err error
		guard, err = breaker.NewHandler(breaker.WithRegistry(h.Registry()), breaker.WithDependency("lookup-api", "lookup"))
		if err != nil {
			t.Fatal(err)
		}
		for i, tl := range c.Tools {
			c.Tools[i] = guard.Guard(tl)
		}
	}})
	a.mode.Store(toolDown)
	for range 2 {
		a.turn()
	}
	if st, c := a.breaker().State(), a.breaker().Counts(); st != registry.StateClosed || c.Failures != 2 {
		t.Fatalf("after 2 failing calls: %v, counts %+v; want closed with 2 failures (each call counted once)", st, c)
	}
	if tk, inv := guard.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("the guard's handler holds %d tickets, %d invocations after the turns", tk, inv)
	}
	a.turn()
	if st := a.breaker().State(); st != registry.StateOpen {
		t.Fatalf("after 3 failing calls: %v, want open", st)
	}
	// The plugin guards the foreign guard too: its probe's real success
	// closes the breaker (an unguarded probe would only be released).
	a.clk.Advance(31 * time.Second)
	a.mode.Store(toolUp)
	a.turn()
	if st := a.breaker().State(); st != registry.StateClosed {
		t.Fatalf("after a successful probe through the foreign guard: %v, want closed", st)
	}
}

// TestRunRefusalEscalatesLikeBeforeTool: a refusal decided in a guarded
// tool's Run (the breaker tripped after the plugin's BeforeTool, here by the
// agent's own before-tool callback) spends the turn's short-circuit budget
// as one from BeforeTool does: with a budget of one it escalates, so a
// LoopAgent stops after this iteration with the plugin's final answer
// instead of failing its next model call with ErrTurnEnded.
func TestRunRefusalEscalatesLikeBeforeTool(t *testing.T) {
	h, err := breaker.NewHandler(breaker.WithDependency("lookup-api", "lookup"), breaker.WithTurnLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	br, err := h.Registry().Get("lookup-api")
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look a record up."},
		func(agent.ToolContext, struct{}) (map[string]any, error) {
			ran.Add(1)
			return map[string]any{"record": "r1"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := llmagent.New(llmagent.Config{Name: "worker", Tools: []tool.Tool{lookup},
		Model: scripted.New("s", func(req *model.LLMRequest) *model.LLMResponse {
			if scripted.LastResponses(req) != nil {
				return scripted.Text("partial")
			}
			return scripted.CallTools(scripted.Call{Name: "lookup"})
		}).WithoutLog(),
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{func(agent.ToolContext, tool.Tool, map[string]any) (map[string]any, error) {
			br.Trip(time.Minute, registry.CauseRetryHint) // after the plugin's BeforeTool admitted nothing
			return nil, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := runLoopOf(t, p, worker)
	if err != nil {
		t.Fatalf("run error after %d events: %v (the refusal in Run did not escalate)", len(evs), err)
	}
	var refusals int
	for _, fr := range functionResponses(evs) {
		if _, ok := degrade.Parse(fr.Response); ok {
			refusals++
		}
	}
	if refusals != 1 || ran.Load() != 0 || !escalated(evs) || endedBy(evs) != "short_circuit_budget" {
		t.Fatalf("refusals %d, tool runs %d, escalated %v, ended by %q: want one refusal from Run, escalated, the turn ended by the plugin",
			refusals, ran.Load(), escalated(evs), endedBy(evs))
	}
	if c := br.Counts(); c.ShortCircuits != 1 || c.Requests != 0 {
		t.Fatalf("counts %+v: want the one refusal, nothing admitted", c)
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
	}
}
