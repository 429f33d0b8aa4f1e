package mcpguard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// clockRegistry is testRegistry on a fake clock (later options win).
func clockRegistry(t *testing.T, opts ...registry.Option) (*registrytest.FakeClock, *registry.Registry) {
	t.Helper()
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	return clk, testRegistry(t, append([]registry.Option{registry.WithClock(clk)}, opts...)...)
}

// TestRestartNotStarvedByOutage: an outage spends the server's retry
// budget; the server then restarts on the same address, forgetting every
// session. On a server that keeps sessions, the first operation after it
// gets HTTP 404 (session missing) and must re-establish its session although
// the budget is spent, instead of failing after one attempt (which, as a
// half-open probe, would double the breaker's hold). A sessionless server
// has nothing to forget: the operation goes through with no handshake.
func TestRestartNotStarvedByOutage(t *testing.T) {
	forProtocols(t, restartNotStarvedByOutage)
}

func restartNotStarvedByOutage(t *testing.T, p protocol) {
	_, reg := clockRegistry(t)
	fs, g, done := httpSetupReg(t, reg, p.config(mcpfault.Config{RecoverAfter: 1000}), mcpguard.Server{Name: "re",
		IdempotentTools: []string{"echo"}, Retry: mcpguard.Retry{Base: time.Millisecond, Cap: time.Millisecond, BudgetMin: 1, NoBudgetRatio: true}})
	defer done()
	tools, err := discover(t, t.Context(), g, "inv")
	if err != nil {
		t.Fatal(err)
	}
	// The outage: an idempotent call fails and retries until the budget (one
	// retry per window) is spent.
	fs.SetMode(mcpfault.Flapping)
	_, err = tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
	if e := asError(t, err); e.Attempts != 2 {
		t.Fatalf("outage: error = %+v, want 2 attempts (the budget's one retry)", e)
	}
	// The restart: sessions are gone, the server is healthy.
	fs.SetMode(mcpfault.None)
	fs.RestartHTTP()
	before := fs.Handshakes()
	out, err := tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
	if err != nil || out[mcpguard.KeyOutput] != "charged 1" {
		t.Fatalf("first call after the restart: out=%v err=%v; want a new session and the answer", out, err)
	}
	want := 0
	if p.sessions() {
		want = 1 // one new session
	}
	if n := fs.Handshakes() - before; n != want {
		t.Errorf("%s: handshakes after the restart = %d, want %d", p.describe(), n, want)
	}
	if n := fs.Executions("charge"); n != 1 {
		t.Errorf("charge ran %d times, want once", n)
	}
}

// TestTimersFollowRegistryClock: what ages in mcpguard (the tool list's
// TTL, the retry budget's window) follows the registry's clock, so MCP
// behaviour can be driven in virtual time like the breakers.
func TestTimersFollowRegistryClock(t *testing.T) {
	clk, reg := clockRegistry(t)
	fs, g, done := httpSetupReg(t, reg, mcpfault.Config{RecoverAfter: 1000}, mcpguard.Server{Name: "clock", ToolsTTL: time.Hour,
		IdempotentTools: []string{"echo"}, Retry: mcpguard.Retry{Base: time.Millisecond, Cap: time.Millisecond, BudgetMin: 1, NoBudgetRatio: true, BudgetWindow: time.Hour}})
	defer done()
	tools, err := discover(t, t.Context(), g, "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := discover(t, t.Context(), g, "inv-2"); err != nil || fs.Requests("tools/list") != 1 {
		t.Fatalf("fresh list: err=%v, tools/list requests %d, want 1", err, fs.Requests("tools/list"))
	}
	clk.Advance(time.Hour)
	if _, err := discover(t, t.Context(), g, "inv-3"); err != nil || fs.Requests("tools/list") != 2 {
		t.Errorf("after the registry clock passed the TTL: err=%v, tools/list requests %d, want 2", err, fs.Requests("tools/list"))
	}

	fs.SetMode(mcpfault.Flapping)
	attempts := func() int {
		_, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
		return asError(t, err).Attempts
	}
	if a, b := attempts(), attempts(); a != 2 || b != 1 {
		t.Fatalf("attempts = %d then %d, want 2 then 1 (the budget's one retry per window)", a, b)
	}
	clk.Advance(time.Hour)
	if a := attempts(); a != 2 {
		t.Errorf("after the registry clock passed the window: %d attempts, want 2 (the budget refilled)", a)
	}
}

// TestHealthyDiscoveryFailingCallsOpens: through the real runner and plugin,
// over HTTP on loopback, a server whose tools/list is healthy and whose every
// call fails opens its breaker after ConsecutiveFailures calls, although
// every turn re-reads the list (ToolsTTL 1s); and once half-open, the
// discovery of the probing turn does not close it: the call is the probe,
// fails, and the hold doubles.
func TestHealthyDiscoveryFailingCallsOpens(t *testing.T) {
	clk, reg := clockRegistry(t, registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 3, DisableFailureRate: true, OpenFor: 10 * time.Second, NoJitter: true, ProbeLease: 2 * time.Minute,
	}))
	fs, g, done := httpSetupReg(t, reg, mcpfault.Config{RecoverAfter: 1 << 20},
		mcpguard.Server{Name: "calls", ToolsTTL: time.Second, Retry: mcpguard.Retry{MaxAttempts: 1}})
	defer done()
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	fs.SetMode(mcpfault.Flapping) // every tools/call: 503; tools/list stays healthy
	br, _ := reg.Lookup("calls")
	llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "x"}}
	opened := 0
	for turn := 1; turn <= 12 && opened == 0; turn++ {
		clk.Advance(time.Second) // the list is stale: every turn discovers again
		runTurn(t, t.Context(), reg, g, llm)
		if br.State() == registry.StateOpen {
			opened = turn
		}
	}
	if opened != 3 {
		t.Fatalf("breaker opened at turn %d (0: never in 12), want 3; counts %+v, list requests %d",
			opened, br.Counts(), fs.Requests("tools/list"))
	}
	lists := fs.Requests("tools/list")
	if lists < 4 {
		t.Fatalf("tools/list requests = %d: discovery did not run every turn", lists)
	}

	clk.Advance(10 * time.Second) // the hold expires: the next reach is a probe
	failures := br.Counts().Failures
	runTurn(t, t.Context(), reg, g, llm)
	if fs.Requests("tools/list") != lists+1 {
		t.Fatalf("probing turn: tools/list requests %d→%d; want one", lists, fs.Requests("tools/list"))
	}
	if st := br.Status(); st.State != registry.StateOpen || st.RetryAfter != 20*time.Second || st.Counts.Trips != 2 {
		t.Errorf("after the probing turn: %s, retry after %s, counts %+v (failures before %d); want open again by the call probe, with the hold doubled to 20s (the healthy discovery must not close it)",
			st.State, st.RetryAfter, st.Counts, failures)
	}
}

// TestServerBudgetBoundsProbe: the server's operation budget bounds a
// half-open probe on its breaker (Breaker.SetCallBudget), not only the
// policy's probe lease: while a probe is out, a refused call is told to
// retry within the budget, and a probe still out at the budget has failed.
func TestServerBudgetBoundsProbe(t *testing.T) {
	clk, reg := clockRegistry(t) // probe lease 2 min
	dial := func(context.Context) (mcp.Transport, error) { return nil, errors.New("not dialled in this test") }
	if _, err := mcpguard.New(reg, []mcpguard.Server{{Name: "budgeted", Dial: dial, ConnectTimeout: time.Second, CallTimeout: 2 * time.Second, OperationBudget: 3 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	br, ok := reg.Lookup("budgeted")
	if !ok {
		t.Fatal("no breaker for the server")
	}
	br.Trip(time.Second, registry.CauseRetryHint)
	clk.Advance(2 * time.Second)
	probe, d := br.Admit()
	if !d.Allowed || !probe.Probe() {
		t.Fatalf("no probe admitted after the hold: %+v", d)
	}
	if _, d := br.Admit(); d.Allowed || d.RetryAfter > 3*time.Second {
		t.Fatalf("while the probe is out: %+v, want a refusal with retry_after ≤ the 3s budget", d)
	}
	clk.Advance(3 * time.Second)
	if st := br.State(); st != registry.StateOpen {
		t.Fatalf("state %v once the budget passed, want open (the probe failed)", st)
	}
}
