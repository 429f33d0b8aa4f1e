package mcpguard_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/tool"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestToolsCarryTheServerKey: the plugin sees the wrapper (not an inner
// tool) and keys its breaker by the server name: discovery and calls are
// one dependency.
func TestToolsCarryTheServerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "mcp:files", Dial: fs.Dial}})
		defer g.Close()
		llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}
		tr := runTurn(t, t.Context(), reg, g, llm)
		if tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != "hi" {
			t.Fatalf("turn = %+v", tr)
		}
		if reg.Len() != 1 {
			t.Errorf("registry holds %d breakers, want 1 (the server's)", reg.Len())
		}
		br, ok := reg.Lookup("mcp:files")
		if !ok {
			t.Fatal("no breaker for the server key")
		}
		// One success from discovery, one from the plugin's call ticket.
		if c := br.Counts(); c.Successes != 2 {
			t.Errorf("breaker counts = %+v, want 2 successes (discovery + call)", c)
		}
		req := llm.requests()[0]
		// The plugin guards it (callbacks.GuardedTool) so that it sees the
		// tool's own outcome; inside is the mcpguard wrapper.
		if tl, _ := req.Tools["echo"].(tool.Tool); tl == nil {
			t.Errorf("req.Tools[echo] is %T, want a tool", req.Tools["echo"])
		} else if _, ok := callbacks.Unwrap(tl).(*mcpguard.Tool); !ok {
			t.Errorf("req.Tools[echo] is %T, want the *mcpguard.Tool wrapper", req.Tools["echo"])
		}
	})
}

// TestIsErrorIsAnAnswer: an isError result reaches the model as a category,
// never verbatim; it is not a fault and is not retried.
func TestIsErrorIsAnAnswer(t *testing.T) {
	for _, detail := range []bool{false, true} {
		t.Run(fmt.Sprintf("detail=%v", detail), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{})
				defer fs.Close()
				reg := testRegistry(t)
				var logs logBuf
				g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "api", Dial: fs.Dial, ToolErrorDetail: detail, IdempotentTools: []string{"refuse"}}},
					mcpguard.WithLogger(newLogger(&logs)))
				defer g.Close()
				llm := &scriptedLLM{Call: "refuse"}
				tr := runTurn(t, t.Context(), reg, g, llm)
				if tr.err != nil {
					t.Fatal(tr.err)
				}
				if tr.fnResp[mcpguard.KeyStatus] != mcpguard.StatusToolError {
					t.Errorf("response = %v, want status tool_error", tr.fnResp)
				}
				seen := fmt.Sprint(tr.fnResp) + tr.final
				for _, leak := range []string{"IGNORE PREVIOUS", "sk-live", "hunter2", "internal.example", "Bearer"} {
					if strings.Contains(seen, leak) {
						t.Errorf("model saw %q: %s", leak, seen)
					}
				}
				d, has := tr.fnResp[mcpguard.KeyUntrustedDetail].(string)
				if has != detail || (detail && (len(d) > mcpguard.MaxDetailBytes || !strings.Contains(d, "[redacted]"))) {
					t.Errorf("untrusted_detail = %q (present %v), want present=%v, redacted, ≤ %d bytes", d, has, detail, mcpguard.MaxDetailBytes)
				}
				if fs.Executions("refuse") != 1 {
					t.Errorf("refuse ran %d times: an answer is never retried", fs.Executions("refuse"))
				}
				br, _ := reg.Lookup("api")
				if c := br.Counts(); c.Failures != 0 || c.Successes != 2 {
					t.Errorf("breaker counts = %+v, want the answer counted as a success", c)
				}
				if h := g.Health()[0]; h.Outcome != mcpguard.ClassRefused || h.ConsecutiveFailures != 0 {
					t.Errorf("health = %+v, want outcome refused", h)
				}
				if l := logs.lines("operation failed"); len(l) != 0 {
					t.Errorf("an answer was logged as a failure: %q", l)
				}
			})
		})
	}
}

// TestInvalidParamsIsARefusal: a JSON-RPC invalid-params error is the
// server's answer: not retried, counted as a success.
func TestInvalidParamsIsARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "api", Dial: fs.Dial, IdempotentTools: []string{"strict"}}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		_, err = tools["strict"].Run(newToolCtx(t.Context()), map[string]any{"id": 7})
		e := asError(t, err)
		if e.Class != mcpguard.ClassRefused || e.Reason != mcpguard.ReasonInvalidParams || e.Attempts != 1 || e.BreakerOutcome() != registry.Success {
			t.Errorf("error = %+v, want a refusal (invalid_params), one attempt, success", e)
		}
		if strings.Contains(e.Error(), "id: required string") {
			t.Errorf("server text in the message: %q", e.Error())
		}
	})
}

// TestOptionalServedFromLastGoodWhileOpen: once the breaker opens, an
// optional (or required) server's last good tool list is served with no
// network, and its calls are short-circuited by the plugin's payload.
func TestOptionalServedFromLastGoodWhileOpen(t *testing.T) {
	for _, noLastGood := range []bool{false, true} {
		t.Run(fmt.Sprintf("no_last_good=%v", noLastGood), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{})
				defer fs.Close()
				reg := testRegistry(t)
				srv := mcpguard.Server{Name: "wx", Capability: "weather", Dial: fs.Dial, ToolsTTL: time.Minute, NoLastGood: noLastGood,
					Retry: mcpguard.Retry{MaxAttempts: 1}}
				g := mcpguard.MustNew(reg, []mcpguard.Server{srv})
				defer g.Close()
				llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "x"}}
				if tr := runTurn(t, t.Context(), reg, g, llm); tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != "x" {
					t.Fatalf("healthy turn = %+v", tr)
				}
				// The server goes away; three failing calls trip the breaker.
				fs.DropConnections()
				fs.SetMode(mcpfault.Unreachable)
				synctest.Wait()
				for i := range 3 {
					tr := runTurn(t, t.Context(), reg, g, llm)
					if msg, _ := tr.fnResp["error"].(string); !strings.Contains(msg, "connection_refused") {
						t.Fatalf("turn %d response = %v", i, tr.fnResp)
					}
				}
				br, _ := reg.Lookup("wx")
				if br.State() != registry.StateOpen {
					t.Fatalf("breaker %s after 3 failures", br.State())
				}
				time.Sleep(2 * time.Minute) // the cached list is stale; the breaker (30s, no jitter) re-opens on its probe
				br.Isolate()
				llm2 := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "y"}}
				tr := runTurn(t, t.Context(), reg, g, llm2)
				if tr.err != nil {
					t.Fatalf("turn failed: %v", tr.err)
				}
				req := llm2.requests()[0]
				if noLastGood {
					if len(declared(req)) != 0 || !strings.Contains(systemText(req), degrade.CapabilityNotice([]string{"weather"})) {
						t.Errorf("declared %v, system %q: want no tools and the notice", declared(req), systemText(req))
					}
					return
				}
				// Offered from the last good list, and still stated as unavailable.
				if len(declared(req)) != 5 || !strings.Contains(systemText(req), degrade.DegradedCapabilityNotice([]string{"weather"})) ||
					strings.Contains(systemText(req), degrade.CapabilityNotice([]string{"weather"})) {
					t.Errorf("declared %v, system %q: want the last good list and the degraded-capability notice", declared(req), systemText(req))
				}
				if tr.fnResp["status"] != degrade.StatusUnavailable {
					t.Errorf("call while open = %v, want the plugin's unavailable payload", tr.fnResp)
				}
				if h := g.Health()[0]; h.State != registry.StateOpen || h.Outcome != mcpguard.ClassUnavailable {
					t.Errorf("health = %+v", h)
				}
			})
		})
	}
}

// TestRequiredUnavailableWhileOpen: with no last good list, a required
// server whose breaker is open fails the turn with the breaker-open error.
func TestRequiredUnavailableWhileOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t)
		_ = reg.Isolate("req")
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "req", Required: true, Dial: fs.Dial}})
		defer g.Close()
		_, err := discover(t, t.Context(), g, "inv")
		var ue *mcpguard.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, registry.ErrOpen) || ue.Server != "req" || ue.State != registry.StateOpen {
			t.Errorf("err = %v, want *UnavailableError for req, open", err)
		}
		if fs.Requests("initialize")+fs.Requests("server/discover") != 0 {
			t.Error("the server was contacted while its breaker was open")
		}
	})
}

// TestStart: assembly fails on a required server only.
func TestStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer down.Close()
		up := mcpfault.New(mcpfault.Config{})
		defer up.Close()
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{
			{Name: "opt", Dial: down.Dial},
			{Name: "req", Required: true, Dial: down.Dial},
			{Name: "ok", Required: true, Dial: up.Dial, ToolPrefix: "ok_"},
		})
		defer g.Close()
		e := asError(t, g.Start(t.Context()))
		if e.Server != "req" {
			t.Errorf("start error names %q, want the required server", e.Server)
		}
		if h := g.Health(); h[2].Tools != 5 || !h[2].Connected || h[0].Outcome != mcpguard.ClassFault {
			t.Errorf("health = %+v", h)
		}
	})
}

// TestNoticeOncePerRequest: the missing capability is stated once in every
// request of the turn, and a failed server is not dialled again within the
// invocation (ADK re-lists on every step when no tool resolved).
func TestNoticeOncePerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer down.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{
			{Name: "a", Capability: "maps", Dial: down.Dial},
			{Name: "b", Capability: "calendar", Dial: down.Dial},
		})
		defer g.Close()
		llm := &scriptedLLM{}
		tr := runTurn(t, t.Context(), reg, g, llm)
		if tr.err != nil || tr.final != "answered without tools" {
			t.Fatalf("turn = %+v", tr)
		}
		want := degrade.CapabilityNotice([]string{"maps", "calendar"})
		for i, req := range llm.requests() {
			if n := strings.Count(systemText(req), want); n != 1 {
				t.Errorf("request %d: notice %d times in %q", i, n, systemText(req))
			}
		}
	})
}

// TestToolPrefixAndCollisions: prefixes keep same-named tools of two servers
// apart; without them the later server's tool is left out (logged once),
// never a "duplicate tool" failure of the turn.
func TestToolPrefixAndCollisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mcpfault.New(mcpfault.Config{})
		defer a.Close()
		b := mcpfault.New(mcpfault.Config{})
		defer b.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "a", Dial: a.Dial, ToolPrefix: "a_"}, {Name: "b", Dial: b.Dial, ToolPrefix: "b_"}})
		tools, err := discover(t, t.Context(), g, "inv")
		g.Close()
		if err != nil || len(tools) != 10 || tools["b_echo"].RemoteName() != "echo" || tools["b_echo"].DependencyKey() != "b" {
			t.Fatalf("prefixed: %d tools, err %v", len(tools), err)
		}
		var logs logBuf
		g2 := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "a", Dial: a.Dial}, {Name: "b", Dial: b.Dial}}, mcpguard.WithLogger(newLogger(&logs)))
		defer g2.Close()
		for i := range 2 {
			tools, err := discover(t, t.Context(), g2, fmt.Sprint("inv", i))
			if err != nil || len(tools) != 5 || tools["echo"].DependencyKey() != "a" {
				t.Fatalf("unprefixed: %d tools, err %v", len(tools), err)
			}
		}
		if n := len(logs.lines("collision")); n != 5 {
			t.Errorf("%d collision log lines, want 5 (once per name)", n)
		}
		// The turn itself does not fail with "duplicate tool".
		tr := runTurn(t, t.Context(), reg, g2, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "z"}})
		if tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != "z" {
			t.Errorf("turn = %+v", tr)
		}
	})
}

// TestMaxToolsCap: a server advertising a thousand tools gets MaxTools
// admitted, and listing stops once the cap is reached.
func TestMaxToolsCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Filler: 1000, Pages: 100})
		defer fs.Close()
		var logs logBuf
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "huge", Dial: fs.Dial, MaxTools: 50}}, mcpguard.WithLogger(newLogger(&logs)))
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil || len(tools) != 50 {
			t.Fatalf("%d tools, err %v", len(tools), err)
		}
		if n := fs.Requests("tools/list"); n != 5 {
			t.Errorf("read %d pages, want 5 (stop at the cap)", n)
		}
		if l := logs.lines("tools left out"); len(l) != 1 || !strings.Contains(l[0], "dropped_max_tools=") {
			t.Errorf("log = %q", l)
		}
	})
}

// TestConcurrentCalls: parallel calls (ADK runs a response's calls in
// parallel) share one session and one dial.
func TestConcurrentCalls(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) { concurrentCalls(t, p) })
}

func concurrentCalls(t *testing.T, p protocol) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(p.config(mcpfault.Config{}))
		defer fs.Close()
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "par", Dial: fs.Dial}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs.DropConnections() // make every call race to reconnect
		synctest.Wait()
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() {
				out, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": fmt.Sprint(i)})
				if err == nil && out[mcpguard.KeyOutput] != fmt.Sprint(i) {
					err = fmt.Errorf("out = %v", out)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := fs.Handshakes(); n != 2 {
			t.Errorf("handshakes = %d, want 2 (discovery + one shared reconnect)", n)
		}
	})
}

func TestValidate(t *testing.T) {
	reg := testRegistry(t)
	_, err := mcpguard.New(reg, []mcpguard.Server{
		{Name: ""},
		{Name: "x", Dial: nil, ConnectTimeout: -1, Retry: mcpguard.Retry{BudgetRatio: 2}},
		{Name: "y", Dial: (&mcpfault.Server{}).Dial, Tools: []string{"a"}, IdempotentTools: []string{"b"}, ToolPrefix: "9bad"},
		{Name: "z", Dial: (&mcpfault.Server{}).Dial, OperationBudget: 10 * time.Minute},
	})
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, want := range []string{"servers[0] (): name: must be a valid dependency key", "one of dial and session is required",
		"connect_timeout: must be ≥ 0", "retry.budget_ratio", `"b" is not in tools`, "tool_prefix", "exceeds the breaker's probe_lease"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	reg2 := registry.MustNew(mcpguard.RegistryOptions(mcpguard.Server{Name: "p", Breaker: &registry.Policy{ConsecutiveFailures: 2}})...)
	if _, err := mcpguard.New(reg2, []mcpguard.Server{{Name: "p", Dial: (&mcpfault.Server{}).Dial, Breaker: &registry.Policy{ConsecutiveFailures: 2}}}); err != nil {
		t.Errorf("installed breaker policy rejected: %v", err)
	}
	if _, err := mcpguard.New(reg, []mcpguard.Server{{Name: "p", Dial: (&mcpfault.Server{}).Dial, Breaker: &registry.Policy{ConsecutiveFailures: 2}}}); err == nil {
		t.Error("breaker policy missing from the registry accepted")
	}
}

// TestDegraded: Degraded lists the optional servers whose discovery failed
// after Start, says whether their last good list is still offered, and
// drops a server at its first good discovery; required servers are never
// listed.
func TestDegraded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := mcpfault.New(mcpfault.Config{Legacy: true})
		defer req.Close()
		opt := mcpfault.New(mcpfault.Config{})
		defer opt.Close()
		clk, reg := clockRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{
			{Name: "req", Required: true, Dial: req.Dial, ToolsTTL: time.Minute, Retry: mcpguard.Retry{MaxAttempts: 1}},
			{Name: "opt", Capability: "notes", Dial: opt.Dial, ToolPrefix: "o_", ToolsTTL: time.Minute, Retry: mcpguard.Retry{MaxAttempts: 1}},
		})
		defer g.Close()
		if d := g.Degraded(); len(d) != 0 {
			t.Fatalf("before Start: %+v, want none", d)
		}
		if err := g.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := g.Degraded(); len(d) != 0 {
			t.Fatalf("healthy: %+v, want none", d)
		}

		// The optional server goes down; its cached list expires.
		opt.SetMode(mcpfault.Unreachable)
		opt.DropConnections()
		req.SetMode(mcpfault.Unreachable)
		req.DropConnections()
		synctest.Wait()
		clk.Advance(2 * time.Minute)
		if err := g.Start(t.Context()); err == nil {
			t.Fatal("Start succeeded with the required server down")
		}
		d := g.Degraded()
		if len(d) != 1 || d[0].Server != "opt" || d[0].Capability != "notes" || !d[0].LastGood {
			t.Fatalf("degraded = %+v, want opt (notes) offered from its last good list", d)
		}
		var e *mcpguard.Error
		if !errors.As(d[0].Err, &e) || e.Reason != mcpguard.ReasonConnectionRefused {
			t.Errorf("err = %v, want the connect failure", d[0].Err)
		}

		// It recovers: the next discovery takes it off the list.
		opt.SetMode(mcpfault.None)
		_, _ = discover(t, t.Context(), g, "inv") // the required server is still down
		if d := g.Degraded(); len(d) != 0 {
			t.Errorf("after recovery: %+v, want none", d)
		}
	})
}
