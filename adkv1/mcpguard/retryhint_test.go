package mcpguard_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// hintSource is a way an MCP server over HTTP asks the client to come back
// later: HTTP 429 with Retry-After, or an SSE stream ended with a retry:
// longer than the operation has left (declined at once). Both are the
// server's retry hint for the breaker.
type hintSource struct {
	name string
	hint time.Duration // the hint the breaker sees (capped at MaxRetryHint)
	// cfg is the server; hinted is the tool whose calls get the hint (every
	// call of it, once the server's mode is set by start), ok a tool
	// answered as usual.
	cfg        mcpfault.Config
	hinted, ok string
	start      func(*mcpfault.Server)
}

func hintSources(p protocol) []hintSource {
	return []hintSource{
		{
			name: "http_429", hint: 40 * time.Second,
			cfg:    p.config(mcpfault.Config{RecoverAfter: 1 << 20, RetryAfter: 40 * time.Second, FlapStatus: 429}),
			hinted: "echo", ok: "echo",
			start: func(fs *mcpfault.Server) { fs.SetMode(mcpfault.Flapping) },
		},
		{
			// A day-long retry: is declined; its hint is capped at the
			// policy's MaxRetryHint (1h).
			name: "sse_retry_declined", hint: time.Hour,
			cfg:    p.config(mcpfault.Config{StreamRetry: "86400000", StreamRetryTools: []string{"echo"}}),
			hinted: "echo", ok: "lookup",
			start: func(*mcpfault.Server) {},
		},
	}
}

// hintServer is an HTTP MCP server behind mcpguard on a registry with the
// default breaker policy (jitter and the probe lease aside) on a fake clock.
func hintServer(t *testing.T, src hintSource) (*mcpfault.Server, *mcpguard.Guard, *registry.Registry, *registry.Breaker, func(time.Duration)) {
	t.Helper()
	clk, reg := clockRegistry(t, registry.WithPolicy("hinted", registry.Policy{NoJitter: true, ProbeLease: 2 * time.Minute}))
	fs, g, done := httpSetupReg(t, reg, src.cfg, mcpguard.Server{Name: "hinted", OperationBudget: 3 * time.Second, Retry: mcpguard.Retry{MaxAttempts: 1}})
	t.Cleanup(done)
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	br, ok := reg.Lookup("hinted")
	if !ok {
		t.Fatal("no breaker for the server")
	}
	return fs, g, reg, br, clk.Advance
}

func callArgs(tool string) map[string]any {
	if tool == "lookup" {
		return map[string]any{"key": "k"}
	}
	return map[string]any{"text": "x"}
}

// TestOneRetryHintAmongSuccessesLeavesServerClosed: through the real runner
// and plugin, an MCP server that answers one call among successes with its
// retry hint (HTTP 429 Retry-After: 40, or a declined SSE retry:) has that
// call counted as one ordinary failure: its breaker stays closed, and the
// next turn's call reaches the server and is answered.
func TestOneRetryHintAmongSuccessesLeavesServerClosed(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) {
		for _, src := range hintSources(p) {
			t.Run(src.name, func(t *testing.T) {
				fs, g, reg, br, _ := hintServer(t, src)
				okLLM := &scriptedLLM{Call: src.ok, Args: callArgs(src.ok)}
				for i := range 3 {
					if tr := runTurn(t, t.Context(), reg, g, okLLM); tr.fnResp[mcpguard.KeyOutput] == nil {
						t.Fatalf("healthy turn %d: response %v", i+1, tr.fnResp)
					}
				}
				src.start(fs)
				tr := runTurn(t, t.Context(), reg, g, &scriptedLLM{Call: src.hinted, Args: callArgs(src.hinted)})
				if _, failed := tr.fnResp["error"]; !failed {
					t.Fatalf("hinted turn: response %v, want the server's refusal", tr.fnResp)
				}
				if st := br.Status(); st.State != registry.StateClosed || st.Counts.Failures != 1 || st.Counts.Trips != 0 {
					t.Fatalf("after one hinted failure among successes: %s cause %v counts %+v; want closed, one ordinary failure", st.State, st.Cause, st.Counts)
				}
				if src.name == "http_429" {
					fs.SetMode(mcpfault.None)
				}
				before := fs.Executions(src.ok)
				for i := range 3 {
					tr := runTurn(t, t.Context(), reg, g, okLLM)
					if tr.fnResp[mcpguard.KeyOutput] == nil || fs.Executions(src.ok) != before+i+1 {
						t.Fatalf("turn %d after the hint: response %v, %s ran %d times (before %d); want the call run and answered",
							i+1, tr.fnResp, src.ok, fs.Executions(src.ok), before)
					}
				}
				if st := br.Status(); st.State != registry.StateClosed || st.Counts.Trips != 0 {
					t.Fatalf("at the end: %s counts %+v, want closed", st.State, st.Counts)
				}
			})
		}
	})
}

// TestRetryHintOnEveryCallOpensServer: a server answering every call with
// its retry hint opens its breaker on the third call (the default
// RetryHintFailures; ConsecutiveFailures is 5), cause retry_hint, for the
// hint (not the 30s OpenFor): the next turn is refused without reaching it
// until the hint has passed.
func TestRetryHintOnEveryCallOpensServer(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) {
		for _, src := range hintSources(p) {
			t.Run(src.name, func(t *testing.T) {
				fs, g, reg, br, advance := hintServer(t, src)
				src.start(fs)
				llm := &scriptedLLM{Call: src.hinted, Args: callArgs(src.hinted)}
				for i := 1; i <= registry.DefaultRetryHintFailures; i++ {
					runTurn(t, t.Context(), reg, g, llm)
					if st := br.State(); (st == registry.StateOpen) != (i == registry.DefaultRetryHintFailures) {
						t.Fatalf("after %d hinted calls: %v, want open on call %d only", i, st, registry.DefaultRetryHintFailures)
					}
				}
				st := br.Status()
				if st.Cause != registry.CauseRetryHint || st.RetryAfter != src.hint || st.Counts.Trips != 1 {
					t.Fatalf("opened: cause %v, retry after %s, counts %+v; want retry_hint for the %s hint", st.Cause, st.RetryAfter, st.Counts, src.hint)
				}
				requests := br.Counts().Requests
				advance(src.hint - time.Second)
				tr := runTurn(t, t.Context(), reg, g, llm)
				if st := br.Status(); tr.fnResp["reason"] != "circuit_open" || st.State != registry.StateOpen || st.Counts.Requests != requests {
					t.Fatalf("a second before the hint ends: response %v, %s, requests %d→%d; want refused, open", tr.fnResp, st.State, requests, st.Counts.Requests)
				}
				advance(time.Second)
				if st := br.State(); st != registry.StateHalfOpen {
					t.Fatalf("once the hint has passed: %v, want half_open", st)
				}
			})
		}
	})
}
