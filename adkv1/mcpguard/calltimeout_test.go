package mcpguard_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestGuardedCallWithCallTimeoutCountsOnce: with a call_timeout on the
// server's dependency, the plugin's guard runs the MCP tool under a tool
// context of its own; the tool still recognises the call as admitted by the
// plugin, so the call is counted once (discovery + call), not twice.
func TestGuardedCallWithCallTimeoutCountsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t, registry.WithPolicy("mcp:files", registry.Policy{
			ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, ProbeLease: 2 * time.Minute, CallTimeout: 30 * time.Second}))
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "mcp:files", Dial: fs.Dial}})
		defer g.Close()
		llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}
		tr := runTurn(t, t.Context(), reg, g, llm)
		if tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != "hi" {
			t.Fatalf("turn = %+v", tr)
		}
		br, _ := reg.Lookup("mcp:files")
		if c := br.Counts(); c.Successes != 2 || c.Requests != 2 {
			t.Errorf("breaker counts = %+v, want 2 successes in 2 requests (discovery + call, each once)", c)
		}
	})
}
