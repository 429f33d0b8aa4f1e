package mcpguard_test

import (
	"net/http"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// TestConnectCeilingSpansTheHandshake: one connect leg (ConnectTimeout)
// bounds every request of the handshake, whichever protocol path it takes:
// a server/discover that is never answered, the initialize a current client
// falls back to on a legacy server, and the subscriptions/listen a current
// client opens from inside Connect. A blackholed server likewise. Timed in
// virtual time: each attempt ends exactly at the ceiling, and the
// operation within its budget. synctest.Test also fails if any goroutine of
// the bubble outlives Close.
func TestConnectCeilingSpansTheHandshake(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) {
		cases := []struct {
			name string
			cfg  mcpfault.Config
			run  bool // the case takes this protocol path
		}{
			{"blackhole", mcpfault.Config{Mode: mcpfault.Blackhole}, true},
			{"slow_discover", mcpfault.Config{Latency: map[string]time.Duration{"server/discover": time.Hour}}, sessionlessClient()},
			{"slow_initialize", mcpfault.Config{Latency: map[string]time.Duration{"initialize": time.Hour}}, p.initializes()},
			{"slow_initialized", mcpfault.Config{Latency: map[string]time.Duration{"notifications/initialized": time.Hour}}, p.initializes()},
			{"slow_listen", mcpfault.Config{Latency: map[string]time.Duration{"subscriptions/listen": time.Hour}}, !p.initializes()},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if !tc.run {
					t.Skipf("%s: this go-sdk's client does not take this path", p.describe())
				}
				synctest.Test(t, func(t *testing.T) {
					fs := mcpfault.New(p.config(tc.cfg))
					defer fs.Close()
					const ceiling = 500 * time.Millisecond // under the 1s bound of a detached write
					g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
						Name: "slow", Required: true, Dial: fs.Dial, ConnectTimeout: ceiling,
						OperationBudget: 5 * time.Second, Retry: mcpguard.Retry{MaxAttempts: 1},
					}})
					defer g.Close()
					start := time.Now()
					_, err := discover(t, t.Context(), g, "inv")
					e := asError(t, err)
					if el := time.Since(start); el != ceiling {
						t.Errorf("connect failed after %s, want exactly the %s ceiling", el, ceiling)
					}
					if e.Boundary != mcpguard.BoundaryConnect || e.Limit != mcpguard.LimitConnectTimeout || e.Class != mcpguard.ClassTimeout {
						t.Errorf("error = %+v, want a connect timeout at its ceiling", e)
					}

					// With retries, the operation budget bounds them all.
					g2 := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
						Name: "slow", Required: true, Dial: fs.Dial, ConnectTimeout: ceiling,
						OperationBudget: 5 * time.Second, Retry: mcpguard.Retry{MaxAttempts: 5},
					}})
					defer g2.Close()
					start = time.Now()
					_, err = discover(t, t.Context(), g2, "inv")
					_ = asError(t, err)
					if el := time.Since(start); el > 5*time.Second {
						t.Errorf("retried connects took %s, beyond the 5s budget", el)
					}
				})
			})
		}
	})
}

// TestHTTPListenWithinConnectCeiling: over streamable HTTP, a current
// server that never answers the subscriptions/listen a current client opens
// from inside Connect costs the connect no more than its ceiling, and the
// session is kept (the request ends with its context; the connection does
// not).
func TestHTTPListenWithinConnectCeiling(t *testing.T) {
	if !sessionlessClient() {
		t.Skip("this go-sdk's client speaks only the legacy handshake: no subscriptions/listen")
	}
	base := testRegistry(t)
	fs := mcpfault.New(mcpfault.Config{Latency: map[string]time.Duration{"subscriptions/listen": time.Hour}})
	tr := &http.Transport{}
	g := mcpguard.MustNew(base, []mcpguard.Server{{Name: "web", Required: true, ConnectTimeout: 300 * time.Millisecond,
		Dial: fs.HTTPDial(mcpguard.HTTPClient(&http.Client{Transport: tr}))}})
	start := time.Now()
	tools, err := discover(t, t.Context(), g, "inv")
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 300*time.Millisecond+200*time.Millisecond {
		t.Errorf("discovery took %s, want within the 300ms connect ceiling (plus the list)", el)
	}
	if out, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"}); err != nil || out[mcpguard.KeyOutput] != "x" {
		t.Fatalf("call: out=%v err=%v", out, err)
	}
	if n := fs.Handshakes(); n != 1 {
		t.Errorf("handshakes = %d, want 1: the session was kept", n)
	}
	g.Close()
	fs.Close()
	tr.CloseIdleConnections()
}

// TestHTTPLegacyAndCurrentInOneToolset: over streamable HTTP, a legacy
// server (sessions, the initialize handshake) and a current one (stateless)
// in one guard both serve their tools, through the real runner and plugin;
// each was connected once, and no goroutine is left after Close.
func TestHTTPLegacyAndCurrentInOneToolset(t *testing.T) {
	base := runtime.NumGoroutine()
	legacy := mcpfault.New(mcpfault.Config{Legacy: true})
	current := mcpfault.New(mcpfault.Config{})
	tr := &http.Transport{}
	hc := mcpguard.HTTPClient(&http.Client{Transport: tr})
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{
		{Name: "old", Required: true, Dial: legacy.HTTPDial(hc), ToolPrefix: "old_"},
		{Name: "new", Required: true, Dial: current.HTTPDial(hc), ToolPrefix: "new_"},
	})
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"old_echo", "new_echo"} {
		tr := runTurn(t, t.Context(), reg, g, &scriptedLLM{Call: name, Args: map[string]any{"text": name}})
		if tr.err != nil || tr.fnResp[mcpguard.KeyOutput] != name {
			t.Errorf("%s through the runner: resp=%v err=%v", name, tr.fnResp, tr.err)
		}
	}
	for name, fs := range map[string]*mcpfault.Server{"legacy": legacy, "current": current} {
		if n := fs.Handshakes(); n != 1 {
			t.Errorf("%s server: handshakes = %d, want 1", name, n)
		}
		if n := fs.Executions("echo"); n != 1 {
			t.Errorf("%s server: echo ran %d times, want 1", name, n)
		}
	}
	wantDiscover := 0
	if sessionlessClient() {
		wantDiscover = 1 // asked, refused, fell back
	}
	if n := legacy.Requests("server/discover"); n != wantDiscover {
		t.Errorf("legacy server: server/discover requests = %d, want %d", n, wantDiscover)
	}
	g.Close()
	legacy.Close()
	current.Close()
	tr.CloseIdleConnections()
	waitGoroutines(t, base)
}
