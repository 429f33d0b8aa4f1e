package mcpguard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// lateDeadline is a context whose deadline is d but whose own timer has not
// fired yet: the moment between a leg's timer firing and the run's, which
// real time produces at random and synctest (timers in creation order) never.
type lateDeadline struct {
	context.Context
	d time.Time
}

func (c lateDeadline) Deadline() (time.Time, bool) { return c.d, true }

// TestRunDeadlineNotChargedSynctest: a leg bounded by the caller's deadline
// that ends before the caller's own timer has fired is still the caller's
// run running out, not the server's fault: excluded, for a call and for a
// discovery.
func TestRunDeadlineNotChargedSynctest(t *testing.T) {
	forProtocols(t, runDeadlineNotChargedSynctest)
}

func runDeadlineNotChargedSynctest(t *testing.T, p protocol) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(p.config(mcpfault.Config{Delay: 500 * time.Millisecond}))
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "slow", Dial: fs.Dial, ToolsTTL: time.Millisecond,
			Retry: mcpguard.Retry{MaxAttempts: 1}}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv-0")
		if err != nil {
			t.Fatal(err)
		}
		fs.SetMode(mcpfault.SlowCall)
		ctx := lateDeadline{t.Context(), time.Now().Add(100 * time.Millisecond)}
		_, err = tools["echo"].Run(newToolCtx(ctx), map[string]any{"text": "x"})
		e := asError(t, err)
		if e.BreakerOutcome() != registry.Excluded || e.Limit != mcpguard.LimitRunDeadline || e.Class != mcpguard.ClassCancelled {
			t.Errorf("call: error = %+v (%s), want excluded, run_deadline", e, e.BreakerOutcome())
		}

		fs.SetMode(mcpfault.SlowList)
		time.Sleep(time.Millisecond) // the list is stale
		ctx = lateDeadline{t.Context(), time.Now().Add(100 * time.Millisecond)}
		if _, err := discover(t, ctx, g, "inv-1"); err != nil { // served from the last good list
			t.Fatal(err)
		}
		if h := g.Health()[0]; h.Operation != mcpguard.BoundaryListTools || h.Outcome != mcpguard.ClassCancelled || h.Limit != mcpguard.LimitRunDeadline {
			t.Errorf("discovery: health = %+v, want cancelled by the run deadline", h)
		}
		br, _ := reg.Lookup("slow")
		if c := br.Counts(); c.Failures != 0 {
			t.Errorf("breaker counts = %+v, want no failure charged to the server", c)
		}
	})
}

// TestRunDeadlineNotChargedRealTime: through the real runner and plugin, a
// server answering in 500ms under a 100ms run deadline is never charged,
// whichever of the leg's timer and the run's fires first (in real time the
// order is random). The call path and the discovery path.
func TestRunDeadlineNotChargedRealTime(t *testing.T) {
	forProtocols(t, runDeadlineNotChargedRealTime)
}

func runDeadlineNotChargedRealTime(t *testing.T, p protocol) {
	const turns = 12
	for _, tc := range []struct {
		name string
		mode mcpfault.Mode
		call string
	}{{"call", mcpfault.SlowCall, "echo"}, {"discovery", mcpfault.SlowList, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := testRegistry(t)
			var logs logBuf
			fs, g, done := httpSetupReg(t, reg, p.config(mcpfault.Config{Delay: 500 * time.Millisecond}),
				mcpguard.Server{Name: "slow", ToolsTTL: time.Millisecond, MinLeg: 10 * time.Millisecond, Retry: mcpguard.Retry{MaxAttempts: 1}},
				mcpguard.WithLogger(newLogger(&logs)))
			defer done()
			if err := g.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			fs.SetMode(tc.mode)
			llm := &scriptedLLM{Call: tc.call, Args: map[string]any{"text": "x"}}
			for range turns {
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				runTurn(t, ctx, reg, g, llm)
				cancel()
			}
			br, _ := reg.Lookup("slow")
			if c := br.Counts(); c.Failures != 0 || br.State() != registry.StateClosed {
				t.Errorf("after %d turns under a 100ms run deadline: counts = %+v, state %s; want no failure charged; failures logged:\n%s",
					turns, c, br.State(), strings.Join(logs.lines("operation failed"), "\n"))
			}
			if n := fs.Requests(map[string]string{"call": "tools/call", "discovery": "tools/list"}[tc.name]); n == 0 {
				t.Errorf("the server saw %d requests: the test did not exercise the path", n)
			}
		})
	}
}

// TestProtocolErrorRawPayload: the bounded raw payload of a protocol fault
// is reachable by code through the typed error, and never by the model.
func TestProtocolErrorRawPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{})
		defer fs.Close()
		reg := testRegistry(t)
		g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "bad", Dial: fs.Dial}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs.SetMode(mcpfault.Malformed)
		_, err = tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
		e := asError(t, err)
		const raw = "not-a-list"
		if e.Class != mcpguard.ClassProtocol || !strings.Contains(e.RawPayload(), raw) || len(e.RawPayload()) > 512 {
			t.Errorf("error = %+v, RawPayload = %q: want the bounded raw response", e, e.RawPayload())
		}
		if strings.Contains(e.Error(), raw) {
			t.Errorf("the message carries the payload: %q", e.Error())
		}
		llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "x"}}
		tr := runTurn(t, t.Context(), reg, g, llm)
		if seen := fmt.Sprint(tr.fnResp); strings.Contains(seen, raw) || tr.fnResp == nil {
			t.Errorf("the model saw %s", seen)
		}
	})
}

// TestHTTPSessionKeptAfterTimeout: over streamable HTTP a call whose leg
// times out ends its own request and nothing else: the session is kept (the
// server is slow, not broken), so the next operation neither pays a
// handshake nor fails on a connection our own deadline closed under it.
func TestHTTPSessionKeptAfterTimeout(t *testing.T) {
	forProtocols(t, httpSessionKeptAfterTimeout)
}

func httpSessionKeptAfterTimeout(t *testing.T, p protocol) {
	fs, g, done := httpSetup(t, p.config(mcpfault.Config{Delay: 500 * time.Millisecond}),
		mcpguard.Server{Name: "slow", CallTimeout: 100 * time.Millisecond, Retry: mcpguard.Retry{MaxAttempts: 1}})
	defer done()
	tools, err := discover(t, t.Context(), g, "inv")
	if err != nil {
		t.Fatal(err)
	}
	fs.SetMode(mcpfault.SlowCall)
	_, err = tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
	if e := asError(t, err); e.Class != mcpguard.ClassTimeout {
		t.Fatalf("error = %+v, want a call timeout", e)
	}
	if !g.Health()[0].Connected {
		t.Error("the session was closed by the call's own deadline")
	}
	fs.SetMode(mcpfault.None)
	if out, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "y"}); err != nil || out[mcpguard.KeyOutput] != "y" {
		t.Fatalf("next call: out=%v err=%v", out, err)
	}
	if n := fs.Handshakes(); n != 1 {
		t.Errorf("handshakes = %d, want 1: the next call paid a handshake", n)
	}
}
