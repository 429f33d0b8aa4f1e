package mcpguard_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/tool"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestGatedWithoutPlugin: with no adkbreaker plugin on the runner, the
// toolset admits its calls through the server's breaker itself: each call
// is counted once, and with the breaker open a call fails with an
// *UnavailableError without reaching the server.
func TestGatedWithoutPlugin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "alone", Dial: fs.Dial}})
		defer g.Close()
		llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}
		if tr := runTurnWith(t, t.Context(), g, llm); tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != "hi" {
			t.Fatalf("turn = %+v", tr)
		}
		br, _ := reg.Lookup("alone")
		if c := br.Counts(); c.Successes != 2 {
			t.Errorf("counts = %+v, want 2 successes (discovery + the call, admitted by the toolset)", c)
		}

		_ = reg.Isolate("alone")
		tr := runTurnWith(t, t.Context(), g, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "again"}})
		if n := fs.Executions("echo"); n != 1 {
			t.Errorf("echo ran %d times, want 1: a call reached a server whose breaker is open", n)
		}
		if msg, _ := tr.fnResp["error"].(string); !strings.Contains(msg, "unavailable") {
			t.Errorf("response while open = %v, want the unavailable error", tr.fnResp)
		}
		tools, _ := discover(t, t.Context(), g, "direct") // the last good list
		_, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
		var ue *mcpguard.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, registry.ErrOpen) || fs.Executions("echo") != 1 {
			t.Errorf("direct Run while open: err = %v, echo ran %d times; want *UnavailableError, not reached", err, fs.Executions("echo"))
		}
	})
}

// TestNotAdmittedTwiceWithPlugin: with the plugin, the toolset does not
// admit again what the plugin admitted. A half-open breaker's one probe is
// the plugin's; were the toolset to admit too, it would be refused (probe
// busy) and the breaker would never close.
func TestNotAdmittedTwiceWithPlugin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Flapping, RecoverAfter: 3})
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "both", Dial: fs.Dial, ToolsTTL: time.Hour,
			Retry: mcpguard.Retry{MaxAttempts: 1}}})
		defer g.Close()
		llm := &scriptedLLM{Call: "charge", Args: map[string]any{"amount": 1}}
		br, _ := reg.Lookup("both")
		for i := range 3 {
			runTurn(t, t.Context(), reg, g, llm)
			if want := map[bool]registry.State{false: registry.StateClosed, true: registry.StateOpen}[i == 2]; br.State() != want {
				t.Fatalf("after %d failing calls: %s (%+v), want %s: each call counted once", i+1, br.State(), br.Counts(), want)
			}
		}
		time.Sleep(31 * time.Second) // the hold expires: the next call is the probe
		tr := runTurn(t, t.Context(), reg, g, llm)
		if tr.fnResp[mcpguard.KeyOutput] != "charged 1" || br.State() != registry.StateClosed {
			t.Errorf("probe turn: response %v, breaker %s; want the probe admitted once, answered, and the breaker closed", tr.fnResp, br.State())
		}
	})
}

// TestIdempotencyKeyMakesRetryable: a call carrying an idempotency key in
// its _meta may be retried after a fault although the operator did not list
// the tool, and the server sees the same key on every attempt; a call
// without a key is sent once.
func TestIdempotencyKeyMakesRetryable(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		name := map[bool]string{true: "with key", false: "without key"}[keyed]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{})
				defer fs.Close()
				keys := 0
				g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "pay", Dial: fs.Dial}},
					mcpguard.WithIdempotencyKeys(func(_ agent.ToolContext, tl *mcpguard.Tool, _ any) string {
						if !keyed || tl.RemoteName() != "charge" {
							return ""
						}
						keys++
						return mcpguard.NewIdempotencyKey()
					}))
				defer g.Close()
				tools, err := discover(t, t.Context(), g, "inv")
				if err != nil {
					t.Fatal(err)
				}
				fs.SetMode(mcpfault.Dropped) // the tool runs, its response is lost
				_, err = tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
				e := asError(t, err)
				metas := fs.CallMeta("charge")
				if !keyed {
					if len(metas) != 1 || e.Attempts != 1 || metas[0][mcpguard.MetaIdempotencyKey] != nil {
						t.Errorf("without a key: %d runs, %d attempts, meta %v; want one, sent once, no key", len(metas), e.Attempts, metas)
					}
					return
				}
				if len(metas) != 3 || e.Attempts != 3 || keys != 1 {
					t.Fatalf("with a key: %d runs, %d attempts, %d keys made; want 3 attempts of one keyed call", len(metas), e.Attempts, keys)
				}
				k, _ := metas[0][mcpguard.MetaIdempotencyKey].(string)
				for i, m := range metas {
					if m[mcpguard.MetaIdempotencyKey] != k || k == "" {
						t.Errorf("attempt %d carried key %v, want %q on every attempt", i+1, m[mcpguard.MetaIdempotencyKey], k)
					}
				}
			})
		})
	}
}

// TestShadowRefusalCountedOnceWithPlugin: with the plugin and a shadow-mode
// breaker that would refuse, the plugin observes the would-be refusal and
// lets the call through; the toolset must not ask the breaker again (it
// would count a second shadow refusal for the same call). Both places where
// the plugin decides are covered: its BeforeTool (open already) and the
// guarded tool's Run (tripped after BeforeTool).
func TestShadowRefusalCountedOnceWithPlugin(t *testing.T) {
	for _, inRun := range []bool{false, true} {
		t.Run(map[bool]string{false: "open at BeforeTool", true: "tripped before Run"}[inRun], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{})
				defer fs.Close()
				reg, err := registry.New(registry.WithDefaultPolicy(registry.Policy{
					ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, Shadow: true,
				}))
				if err != nil {
					t.Fatal(err)
				}
				g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "shadowed", Dial: fs.Dial, ToolsTTL: time.Hour}})
				defer g.Close()
				llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}}
				runTurn(t, t.Context(), reg, g, llm) // discovers the tools while closed
				br, _ := reg.Lookup("shadowed")
				var extra []*plugin.Plugin
				if inRun {
					// A plugin after adkbreaker trips the breaker after adkbreaker's BeforeTool.
					p, err := plugin.New(plugin.Config{Name: "tripper",
						BeforeToolCallback: func(agent.ToolContext, tool.Tool, map[string]any) (map[string]any, error) {
							br.Trip(time.Minute, registry.CauseRetryHint)
							return nil, nil
						}})
					if err != nil {
						t.Fatal(err)
					}
					extra = append(extra, p)
				} else {
					br.Trip(time.Minute, registry.CauseRetryHint)
				}
				before := br.Counts().ShadowRefusals
				tr := runTurn(t, t.Context(), reg, g, llm, extra...)
				if tr.fnResp[mcpguard.KeyOutput] != "hi" {
					t.Fatalf("turn = %+v, want the call through (shadow mode)", tr)
				}
				if got := br.Counts().ShadowRefusals - before; got != 1 {
					t.Errorf("shadow refusals for one call = %d, want 1", got)
				}
			})
		})
	}
}
