package mcpguard_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/tool"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// discover runs the guard's toolset discovery as ADK would at the start of
// an agent run, and returns the tools by name.
func discover(t *testing.T, ctx context.Context, g *mcpguard.Guard, inv string) (map[string]*mcpguard.Tool, error) {
	t.Helper()
	ts, err := g.Toolset().Tools(&roCtx{ctx: ctx, inv: inv})
	out := map[string]*mcpguard.Tool{}
	for _, tl := range ts {
		out[tl.Name()] = tl.(*mcpguard.Tool)
	}
	return out, err
}

func asError(t *testing.T, err error) *mcpguard.Error {
	t.Helper()
	var e *mcpguard.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *mcpguard.Error", err, err)
	}
	return e
}

// TestBudgetSharedAcrossLegs: budget 20s, each handshake request 4s, the
// initialized confirmation (legacy handshake only) 2s: the call is granted
// what the reconnect left of the budget, not a fresh call timeout, whether
// the connect was one server/discover, one initialize, or a server/discover
// refused by a legacy server and the initialize it falls back to.
func TestBudgetSharedAcrossLegs(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) {
		synctest.Test(t, func(t *testing.T) {
			fs := mcpfault.New(p.config(mcpfault.Config{Latency: map[string]time.Duration{
				mcpfault.Handshake: 4 * time.Second, "notifications/initialized": 2 * time.Second,
			}}))
			defer fs.Close()
			reg := testRegistry(t)
			g := mcpguard.MustNew(reg, []mcpguard.Server{{
				Name: "slow", Dial: fs.Dial, ConnectTimeout: 12 * time.Second,
				OperationBudget: 20 * time.Second, // the call leg's default 30s is narrowed by it
			}})
			defer g.Close()
			handshake := p.handshakeTime(4*time.Second, 2*time.Second)

			// Discovery pays the handshake too, then the list.
			start := time.Now()
			tools, err := discover(t, t.Context(), g, "inv-1")
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != handshake {
				t.Errorf("%s: discovery took %s, want exactly the handshake's %s", p.describe(), got, handshake)
			}

			// The session drops; the call reconnects and hangs.
			fs.DropConnections()
			fs.SetMode(mcpfault.SlowCall)
			synctest.Wait()
			start = time.Now()
			_, err = tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
			e := asError(t, err)
			if got := time.Since(start); got != 20*time.Second {
				t.Errorf("call operation took %s, want exactly the 20s budget", got)
			}
			if e.Granted != 20*time.Second-handshake || e.Limit != mcpguard.LimitOperationBudget || e.Boundary != mcpguard.BoundaryCallTool || e.Class != mcpguard.ClassTimeout {
				t.Errorf("error = %+v, want the call leg granted exactly %s by the operation budget", e, 20*time.Second-handshake)
			}
			if e.BreakerOutcome() != registry.Failure {
				t.Errorf("outcome = %s, want failure (our deadline fired on a slow server)", e.BreakerOutcome())
			}
			if n := fs.Handshakes(); n != 2 {
				t.Errorf("handshakes = %d, want 2 (discovery, reconnect)", n)
			}
		})
	})
}

// TestFiftyPagesOneBudget: a 50-page tool list is bounded by one discovery
// timeout and one operation budget, not by 50 of them.
func TestFiftyPagesOneBudget(t *testing.T) {
	cfg := mcpfault.Config{Filler: 95, Pages: 50} // 5 default tools + 95 = 100, 2 per page
	t.Run("healthy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := cfg
			c.Mode, c.Delay = mcpfault.SlowList, 100*time.Millisecond
			fs := mcpfault.New(c)
			defer fs.Close()
			g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "big", Dial: fs.Dial, DiscoveryTimeout: 10 * time.Second}})
			defer g.Close()
			start := time.Now()
			tools, err := discover(t, t.Context(), g, "inv")
			if err != nil {
				t.Fatal(err)
			}
			if len(tools) != 100 || fs.Requests("tools/list") != 50 || time.Since(start) != 5*time.Second {
				t.Errorf("got %d tools from %d pages in %s, want 100 from 50 in 5s", len(tools), fs.Requests("tools/list"), time.Since(start))
			}
		})
	})
	for _, tc := range []struct {
		name      string
		discovery time.Duration
		budget    time.Duration
		limit     mcpguard.Limit
	}{
		{"discovery_timeout", 10 * time.Second, 50 * time.Second, mcpguard.LimitDiscoveryTimeout},
		{"operation_budget", 0, 8 * time.Second, mcpguard.LimitOperationBudget}, // default 10s discovery, narrowed
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := cfg
				c.Mode, c.Delay = mcpfault.SlowList, 300*time.Millisecond // 50 pages would take 15s
				fs := mcpfault.New(c)
				defer fs.Close()
				g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
					Name: "big", Dial: fs.Dial, Required: true, DiscoveryTimeout: tc.discovery,
					OperationBudget: tc.budget, Retry: mcpguard.Retry{MaxAttempts: 1},
				}})
				defer g.Close()
				start := time.Now()
				_, err := discover(t, t.Context(), g, "inv")
				e := asError(t, err)
				want := min(cmp.Or(tc.discovery, mcpguard.DefaultDiscoveryTimeout), tc.budget)
				if got := time.Since(start); got != want {
					t.Errorf("discovery failed after %s, want exactly %s", got, want)
				}
				if e.Limit != tc.limit || e.Boundary != mcpguard.BoundaryListTools {
					t.Errorf("error = %+v, want limit %s at list_tools", e, tc.limit)
				}
				if n := fs.Requests("tools/list"); n >= 50 {
					t.Errorf("read %d pages; the budget should have stopped it", n)
				}
			})
		})
	}
}

// TestBudgetExhaustedRefusesToSend: with less than MinLeg left, the call is
// not sent, the error names the budget and the server, and the breaker does
// not count it.
func TestBudgetExhaustedRefusesToSend(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) { budgetExhaustedRefusesToSend(t, p) })
}

func budgetExhaustedRefusesToSend(t *testing.T, p protocol) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(p.config(mcpfault.Config{}))
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "budgeted", Dial: fs.Dial, OperationBudget: 3 * time.Second}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		charge := tools["charge"]

		{ // run_deadline: the run itself has 30ms left
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			_, err := charge.Run(newToolCtx(ctx), map[string]any{"amount": 1})
			e := asError(t, err)
			if !errors.Is(err, mcpguard.ErrBudgetExhausted) || e.Limit != mcpguard.LimitRunDeadline || e.BreakerOutcome() != registry.Excluded {
				t.Errorf("error = %+v, want budget exhausted by the run deadline, excluded", e)
			}
			if !strings.Contains(e.Error(), `server "budgeted"`) || !strings.Contains(e.Error(), "budget exhausted") {
				t.Errorf("message %q must name the server and say budget exhausted", e.Error())
			}
		}
		{ // operation_budget
			// The reconnect's handshake eats all but 30ms of the 3s budget.
			// (Spread over the handshake requests: one, or a refused
			// server/discover and the initialize it falls back to.)
			fs.SetLatency(mcpfault.Handshake, 2970*time.Millisecond/time.Duration(p.handshakeRequests()))
			fs.DropConnections()
			synctest.Wait()
			start := time.Now()
			_, err := charge.Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
			e := asError(t, err)
			if !errors.Is(err, mcpguard.ErrBudgetExhausted) || e.Limit != mcpguard.LimitOperationBudget || e.Boundary != mcpguard.BoundaryCallTool {
				t.Errorf("error = %+v, want the operation budget exhausted before call_tool", e)
			}
			if !strings.Contains(e.Error(), "operation budget 3s spent before call_tool could be sent; the server was not asked") {
				t.Errorf("message = %q", e.Error())
			}
			if got := time.Since(start); got != 2970*time.Millisecond {
				t.Errorf("refused after %s, want right after the handshake", got)
			}
		}
		if n := fs.Requests("tools/call"); n != 0 {
			t.Errorf("server received %d tools/call; an exhausted budget must not send", n)
		}
		br, _ := reg.Lookup("budgeted")
		if c := br.Counts(); c.Failures != 0 {
			t.Errorf("breaker counted %d failures for refusals", c.Failures)
		}
		_ = tool.Tool(charge)
	})
}
