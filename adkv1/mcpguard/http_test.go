package mcpguard_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/mcptoolset"
	"google.golang.org/genai"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// httpCase runs over streamable HTTP on 127.0.0.1 in real time, with short
// limits. Goroutines are counted back to the baseline afterwards.
func httpSetup(t *testing.T, cfg mcpfault.Config, srv mcpguard.Server) (*mcpfault.Server, *mcpguard.Guard, func()) {
	t.Helper()
	return httpSetupReg(t, testRegistry(t), cfg, srv)
}

// httpSetupReg is httpSetup on the caller's registry, with guard options.
func httpSetupReg(t *testing.T, reg *registry.Registry, cfg mcpfault.Config, srv mcpguard.Server, opts ...mcpguard.Option) (*mcpfault.Server, *mcpguard.Guard, func()) {
	t.Helper()
	base := runtime.NumGoroutine()
	fs := mcpfault.New(cfg)
	tr := &http.Transport{}
	hc := mcpguard.HTTPClient(&http.Client{Transport: tr})
	srv.Dial = fs.HTTPDial(hc)
	g := mcpguard.MustNew(reg, []mcpguard.Server{srv}, opts...)
	return fs, g, func() {
		g.Close()
		fs.Close()
		tr.CloseIdleConnections()
		waitGoroutines(t, base)
	}
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left (baseline %d):\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

func TestHTTPModes(t *testing.T) {
	forProtocols(t, httpModes)
}

func httpModes(t *testing.T, p protocol) {
	short := mcpguard.Server{Name: "web", ConnectTimeout: 300 * time.Millisecond, DiscoveryTimeout: 300 * time.Millisecond,
		CallTimeout: time.Second, OperationBudget: 2 * time.Second, Retry: mcpguard.Retry{MaxAttempts: 1}}
	for _, tc := range []struct {
		mode     mcpfault.Mode
		call     string
		boundary mcpguard.Boundary
		class    mcpguard.Class
		reason   mcpguard.Reason
		execs    int
	}{
		{mcpfault.None, "charge", "", mcpguard.ClassOK, "", 1},
		{mcpfault.Unreachable, "", mcpguard.BoundaryConnect, mcpguard.ClassFault, mcpguard.ReasonConnectionRefused, 0},
		{mcpfault.Blackhole, "", mcpguard.BoundaryConnect, mcpguard.ClassTimeout, mcpguard.ReasonDeadline, 0},
		{mcpfault.SlowList, "", mcpguard.BoundaryListTools, mcpguard.ClassTimeout, mcpguard.ReasonDeadline, 0},
		{mcpfault.SlowCall, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassTimeout, mcpguard.ReasonDeadline, 0},
		{mcpfault.Flapping, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassFault, mcpguard.ReasonServerError, 0},
		{mcpfault.Malformed, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassProtocol, mcpguard.ReasonMalformed, 1},
		{mcpfault.Truncated, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassProtocol, mcpguard.ReasonTruncated, 1},
		{mcpfault.Oversized, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassProtocol, mcpguard.ReasonOversized, 1},
		{mcpfault.Dropped, "charge", mcpguard.BoundaryCallTool, mcpguard.ClassFault, mcpguard.ReasonConnectionClosed, 1},
		{mcpfault.SchemaViolation, "lookup", mcpguard.BoundaryCallTool, mcpguard.ClassProtocol, mcpguard.ReasonSchemaViolation, 1},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			discoveryFault := tc.call == ""
			cfg := p.config(mcpfault.Config{OversizeBytes: 1 << 20})
			srv := short
			if tc.mode == mcpfault.Oversized {
				// Just over the 256 KiB cap, with time to spare: what is
				// tested is the cap, not the leg's timeout, and a 1 MiB
				// body under -race on a loaded machine could reach that
				// first.
				cfg.OversizeBytes = mcpguard.DefaultMaxResultBytes + 64<<10
				srv.CallTimeout, srv.OperationBudget = 10*time.Second, 20*time.Second
			}
			if discoveryFault {
				cfg.Mode = tc.mode
				srv.Required = true
			}
			fs, g, done := httpSetup(t, cfg, srv)
			defer done()
			start := time.Now()
			tools, err := discover(t, t.Context(), g, "inv")
			if discoveryFault {
				e := asError(t, err)
				if e.Boundary != tc.boundary || e.Class != tc.class || e.Reason != tc.reason {
					t.Errorf("error = %+v", e)
				}
				if el := time.Since(start); el > srv.OperationBudget {
					t.Errorf("took %s", el)
				}
				t.Logf("%s: discovery failed after %s: %v", tc.mode, time.Since(start), e)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fs.SetMode(tc.mode)
			out, err := tools[tc.call].Run(newToolCtx(t.Context()), map[string]any{"amount": 1, "key": "k"})
			if tc.class == mcpguard.ClassOK {
				if err != nil || out[mcpguard.KeyOutput] == nil {
					t.Errorf("out=%v err=%v", out, err)
				}
			} else {
				e := asError(t, err)
				if e.Boundary != tc.boundary || e.Class != tc.class || e.Reason != tc.reason {
					t.Errorf("error = %+v (%v)", e, e.Cause)
				}
			}
			if n := fs.Executions(tc.call); n != tc.execs {
				t.Errorf("executions = %d, want %d", n, tc.execs)
			}
			if el := time.Since(start); el > 2*srv.OperationBudget {
				t.Errorf("took %s", el)
			}
		})
	}
}

// TestHTTPRetryAfter: a delay the server asked for is waited out exactly when
// it fits the budget, and not acted on when it does not — never shortened.
func TestHTTPRetryAfter(t *testing.T) {
	forProtocols(t, httpRetryAfter)
}

func httpRetryAfter(t *testing.T, p protocol) {
	srv := mcpguard.Server{Name: "ra", OperationBudget: 3 * time.Second, IdempotentTools: []string{"echo"}}
	t.Run("fits", func(t *testing.T) {
		fs, g, done := httpSetup(t, p.config(mcpfault.Config{RecoverAfter: 1, RetryAfter: time.Second}), srv)
		defer done()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs.SetMode(mcpfault.Flapping)
		start := time.Now()
		out, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "hi"})
		el := time.Since(start)
		if err != nil || out[mcpguard.KeyOutput] != "hi" {
			t.Fatalf("out=%v err=%v", out, err)
		}
		if el < time.Second || el > 1500*time.Millisecond {
			t.Errorf("retried after %s, want the server's 1s exactly (plus the call)", el)
		}
	})
	t.Run("overruns", func(t *testing.T) {
		fs, g, done := httpSetup(t, p.config(mcpfault.Config{RecoverAfter: 1, RetryAfter: 10 * time.Second}), srv)
		defer done()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs.SetMode(mcpfault.Flapping)
		start := time.Now()
		_, err = tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "hi"})
		e := asError(t, err)
		if e.Attempts != 1 || e.RetryAfter != 10*time.Second || e.RetryAfterHint() != 10*time.Second {
			t.Errorf("error = %+v, want one attempt and the 10s hint kept for the breaker", e)
		}
		if el := time.Since(start); el > 500*time.Millisecond {
			t.Errorf("gave up after %s, want at once", el)
		}
	})
}

// TestADKResendsCharacterisation pins the behaviour this layer exists to
// avoid: ADK's own mcptoolset resends tools/call after a dropped connection,
// so a non-idempotent tool whose response was lost runs twice; through
// mcpguard it runs once.
func TestADKResendsCharacterisation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		ts, err := mcptoolset.New(mcptoolset.Config{Transport: fs.Transport()})
		if err != nil {
			t.Fatal(err)
		}
		llm := &scriptedLLM{Call: "charge", Args: map[string]any{"amount": 1}}
		a, _ := llmagent.New(llmagent.Config{Name: "agent", Model: llm, Toolsets: []tool.Toolset{ts}})
		r, _ := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
		fs.SetMode(mcpfault.Dropped)
		var adkResp any
		for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ev.Content.Parts {
				if p.FunctionResponse != nil {
					adkResp = p.FunctionResponse.Response
				}
			}
		}
		t.Logf("ADK's function response: %v", adkResp)
		adk := fs.Executions("charge")

		fs2 := mcpfault.New(mcpfault.Config{})
		defer fs2.Close()
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "pay", Dial: fs2.Dial}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs2.SetMode(mcpfault.Dropped)
		_, err = tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
		if err == nil || !strings.Contains(err.Error(), "connection_closed") {
			t.Errorf("err = %v", err)
		}
		ours := fs2.Executions("charge")
		if adk != 2 || ours != 1 {
			t.Errorf("non-idempotent charge after a mid-call drop: ADK mcptoolset %d runs (want 2), mcpguard %d (want 1)", adk, ours)
		}
	})
}

// TestHTTPBlackholeWithinBudget: against a server that accepts and never
// answers, the operation ends at its budget: the go-sdk's cancellation
// notice, its fallback from server/discover to initialize and its
// session-closing request are not allowed past it.
func TestHTTPBlackholeWithinBudget(t *testing.T) {
	forProtocols(t, httpBlackholeWithinBudget)
}

func httpBlackholeWithinBudget(t *testing.T, p protocol) {
	srv := mcpguard.Server{Name: "bh", Required: true, OperationBudget: 300 * time.Millisecond, // narrows the default connect timeout
		Retry: mcpguard.Retry{MaxAttempts: 1}}
	_, g, done := httpSetup(t, p.config(mcpfault.Config{Mode: mcpfault.Blackhole}), srv)
	defer done()
	start := time.Now()
	_, err := discover(t, t.Context(), g, "inv")
	el := time.Since(start)
	e := asError(t, err)
	if e.Limit != mcpguard.LimitOperationBudget || e.Class != mcpguard.ClassTimeout {
		t.Errorf("error = %+v", e)
	}
	if el > srv.OperationBudget+50*time.Millisecond {
		t.Errorf("operation took %s, budget %s", el, srv.OperationBudget)
	}
}
