package mcpguard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/degrade"
)

// matrixServer is the policy under test in the fault matrix (gobreaker-notes
// §4.4 budgets: connect 2s, list 3s, call 10s, one 15s budget per operation).
func matrixServer(fs *mcpfault.Server, required bool) mcpguard.Server {
	return mcpguard.Server{
		Name: "flaky", Capability: "flaky records", Required: required, Dial: fs.Dial,
		ConnectTimeout: 2 * time.Second, DiscoveryTimeout: 3 * time.Second,
		CallTimeout: 10 * time.Second, OperationBudget: 15 * time.Second,
		MaxResultBytes: 256 << 10,
	}
}

// expectation of one fault mode.
type expectation struct {
	discovery bool // the fault hits discovery (else the call)
	call      string
	args      map[string]any
	boundary  mcpguard.Boundary
	class     mcpguard.Class
	reason    mcpguard.Reason
	limit     mcpguard.Limit
	execs     int // server-side runs of call
}

var matrix = map[mcpfault.Mode]expectation{
	mcpfault.None:            {call: "charge", args: map[string]any{"amount": 1}, class: mcpguard.ClassOK, execs: 1},
	mcpfault.Unreachable:     {discovery: true, boundary: mcpguard.BoundaryConnect, class: mcpguard.ClassFault, reason: mcpguard.ReasonConnectionRefused},
	mcpfault.Blackhole:       {discovery: true, boundary: mcpguard.BoundaryConnect, class: mcpguard.ClassTimeout, reason: mcpguard.ReasonDeadline, limit: mcpguard.LimitConnectTimeout},
	mcpfault.SlowList:        {discovery: true, boundary: mcpguard.BoundaryListTools, class: mcpguard.ClassTimeout, reason: mcpguard.ReasonDeadline, limit: mcpguard.LimitDiscoveryTimeout},
	mcpfault.SlowCall:        {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassTimeout, reason: mcpguard.ReasonDeadline, limit: mcpguard.LimitCallTimeout, execs: 0},
	mcpfault.Flapping:        {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassFault, reason: mcpguard.ReasonConnectionClosed, execs: 0},
	mcpfault.Malformed:       {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassProtocol, reason: mcpguard.ReasonMalformed, execs: 1},
	mcpfault.Truncated:       {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassProtocol, reason: mcpguard.ReasonTruncated, execs: 1},
	mcpfault.Oversized:       {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassProtocol, reason: mcpguard.ReasonOversized, limit: mcpguard.LimitMaxResultBytes, execs: 1},
	mcpfault.Dropped:         {call: "charge", args: map[string]any{"amount": 1}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassFault, reason: mcpguard.ReasonConnectionClosed, execs: 1},
	mcpfault.SchemaViolation: {call: "lookup", args: map[string]any{"key": "k"}, boundary: mcpguard.BoundaryCallTool, class: mcpguard.ClassProtocol, reason: mcpguard.ReasonSchemaViolation, execs: 1},
}

// TestFaultMatrix runs one real ADK turn per fault mode × optional/required
// × protocol (a current and a legacy faulty server), with a second, healthy
// server of the other protocol alongside in the same toolset, in virtual
// time.
func TestFaultMatrix(t *testing.T) {
	forProtocols(t, faultMatrix)
}

func faultMatrix(t *testing.T, p protocol) {
	for _, mode := range mcpfault.Modes() {
		want, ok := matrix[mode]
		if !ok {
			t.Fatalf("no expectation for %s", mode)
		}
		for _, required := range []bool{false, true} {
			name := fmt.Sprintf("%s/optional", mode)
			if required {
				name = fmt.Sprintf("%s/required", mode)
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runMatrixCase(t, p, mode, required, want) })
			})
		}
	}
}

func runMatrixCase(t *testing.T, p protocol, mode mcpfault.Mode, required bool, want expectation) {
	fs := mcpfault.New(p.config(mcpfault.Config{Mode: mode, OversizeBytes: 1 << 20}))
	defer fs.Close()
	healthy := mcpfault.New(mcpfault.Config{Legacy: !p.legacy}) // the other protocol
	defer healthy.Close()
	reg := testRegistry(t)
	var logs logBuf
	srv := matrixServer(fs, required)
	g, err := mcpguard.New(reg, []mcpguard.Server{srv, {Name: "other", Dial: healthy.Dial, ToolPrefix: "other_"}},
		mcpguard.WithLogger(newLogger(&logs)))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	call, args := want.call, want.args
	if want.discovery {
		call, args = "other_echo", map[string]any{"text": "still here"}
	}
	llm := &scriptedLLM{Call: call, Args: args}
	tr := runTurn(t, t.Context(), reg, g, llm)
	t.Logf("%s required=%v: %s elapsed, err=%v, response=%v, attempts/health=%+v", mode, required, tr.elapsed, tr.err, tr.fnResp, g.Health()[0])

	// Bounded: one operation is slow at most, and it spends one budget.
	if tr.elapsed > srv.OperationBudget {
		t.Errorf("turn took %s, budget %s", tr.elapsed, srv.OperationBudget)
	}
	notice := degrade.CapabilityNotice([]string{srv.Capability})
	switch {
	case want.discovery && required:
		var e *mcpguard.Error
		if !errors.As(tr.err, &e) {
			t.Fatalf("turn error = %v, want *mcpguard.Error", tr.err)
		}
		checkErr(t, e, want)
		if len(llm.requests()) != 0 {
			t.Errorf("model was called %d times; a required server's failure ends the turn first", len(llm.requests()))
		}
	case want.discovery:
		if tr.err != nil {
			t.Fatalf("optional server failed the turn: %v", tr.err)
		}
		reqs := llm.requests()
		if len(reqs) == 0 {
			t.Fatal("model never called")
		}
		for i, req := range reqs {
			if n := strings.Count(systemText(req), notice); n != 1 {
				t.Errorf("request %d carries the capability notice %d times, want 1; system=%q", i, n, systemText(req))
			}
			for _, d := range declared(req) {
				if !strings.HasPrefix(d, "other_") {
					t.Errorf("request %d declares %q from the failed server", i, d)
				}
			}
		}
		if got := fmt.Sprint(tr.fnResp); !strings.Contains(got, "still here") {
			t.Errorf("healthy server's tool result = %v", tr.fnResp)
		}
		h := g.Health()[0]
		if h.Outcome != want.class || h.Boundary != want.boundary || h.Limit != want.limit {
			t.Errorf("health = %+v, want outcome %s boundary %s limit %s", h, want.class, want.boundary, want.limit)
		}
	default: // the fault is in the call, or none: discovery succeeded
		if tr.err != nil {
			t.Fatalf("turn failed: %v", tr.err)
		}
		for i, req := range llm.requests() {
			if strings.Contains(systemText(req), "Temporarily unavailable") {
				t.Errorf("request %d carries a capability notice though discovery succeeded", i)
			}
		}
		if want.class == mcpguard.ClassOK {
			if _, ok := tr.fnResp[mcpguard.KeyOutput]; !ok {
				t.Errorf("function response = %v, want an output", tr.fnResp)
			}
		} else {
			msg, _ := tr.fnResp["error"].(string)
			if !strings.Contains(msg, `mcpguard: server "flaky"`) || !strings.Contains(msg, string(want.reason)) && want.class != mcpguard.ClassTimeout {
				t.Errorf("function response = %v, want the typed error", tr.fnResp)
			}
			if want.class == mcpguard.ClassTimeout && !strings.Contains(msg, string(want.limit)) {
				t.Errorf("function response = %v, want the limit %s named", tr.fnResp, want.limit)
			}
			h := g.Health()[0]
			if h.Outcome != want.class || h.Boundary != want.boundary || h.Limit != want.limit {
				t.Errorf("health = %+v, want %s at %s (%s)", h, want.class, want.boundary, want.limit)
			}
		}
		if got := fs.Executions(want.call); got != want.execs {
			t.Errorf("server ran %s %d times, want %d", want.call, got, want.execs)
		}
	}
	// One log line per failed operation, none on success.
	fails := logs.lines("operation failed")
	if want.class == mcpguard.ClassOK && len(fails) != 0 {
		t.Errorf("log lines on success: %q", fails)
	}
	if want.class != mcpguard.ClassOK {
		if len(fails) != 1 {
			t.Errorf("want 1 failure log line, got %d: %q", len(fails), fails)
		} else if ln := fails[0]; !strings.Contains(ln, "server=flaky") || !strings.Contains(ln, "boundary="+string(want.boundary)) ||
			!strings.Contains(ln, "limit="+string(want.limit)) {
			t.Errorf("log line %q lacks server/boundary/limit", ln)
		}
	}
	// No connection left behind by a failure: the server side sees every
	// abandoned connection closed; at most the one live session remains.
	synctest.Wait()
	live := 1 // the guard's one session (a slow server's session stays usable)
	if want.boundary == mcpguard.BoundaryConnect {
		live = 0
	}
	if n := fs.OpenConnections(); n > live {
		t.Errorf("%d connections open after the turn, want ≤ %d", n, live)
	}
	g.Close()
	synctest.Wait()
	if n := fs.OpenConnections(); n != 0 {
		t.Errorf("%d connections left open after Close", n)
	}
}

func checkErr(t *testing.T, e *mcpguard.Error, want expectation) {
	t.Helper()
	if e.Server != "flaky" || e.Boundary != want.boundary || e.Class != want.class || e.Reason != want.reason || e.Limit != want.limit {
		t.Errorf("error = %+v (%v), want boundary %s class %s reason %s limit %s", e, e, want.boundary, want.class, want.reason, want.limit)
	}
}
