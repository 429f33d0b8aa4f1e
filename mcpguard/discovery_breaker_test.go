package mcpguard_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/mcpguard"
	"github.com/adkbreaker/adkbreaker/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestHealthyDiscoveryFailingCallsOpens: through the real runner and plugin,
// over HTTP on loopback, a server whose tools/list is healthy and whose every
// call fails opens its breaker after ConsecutiveFailures calls, although
// every turn re-reads the list (ToolsTTL 1s); and once half-open, the
// discovery of the probing turn does not close it: the call is the probe,
// fails, and the hold doubles.
func TestHealthyDiscoveryFailingCallsOpens(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg, err := registry.New(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 3, DisableFailureRate: true, OpenFor: 10 * time.Second, NoJitter: true, ProbeLease: 2 * time.Minute,
	}))
	if err != nil {
		t.Fatal(err)
	}
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
