package mcpguard_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestJoinedDiscoverySurvivesLeaderCancel: turn A starts a discovery and is
// cancelled (the user hung up); turn B joined that discovery with a healthy
// context. B must not get A's cancellation: it discovers for itself, within
// its own budget. Required (Start) and optional (Toolset.Tools) alike.
func TestJoinedDiscoverySurvivesLeaderCancel(t *testing.T) {
	for _, required := range []bool{true, false} {
		name := map[bool]string{true: "required", false: "optional"}[required]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{Latency: map[string]time.Duration{"tools/list": 300 * time.Millisecond}})
				defer fs.Close()
				g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
					Name: "notes", Capability: "notes", Required: required, Dial: fs.Dial, OperationBudget: 5 * time.Second,
				}})
				defer g.Close()
				ctxA, cancelA := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				var errA, errB error
				var toolsB map[string]*mcpguard.Tool
				var tookB time.Duration
				wg.Go(func() { _, errA = discover(t, ctxA, g, "inv-A") })
				time.Sleep(50 * time.Millisecond)
				wg.Go(func() {
					start := time.Now()
					toolsB, errB = discover(t, t.Context(), g, "inv-B")
					tookB = time.Since(start)
				})
				time.Sleep(50 * time.Millisecond)
				cancelA()
				wg.Wait()
				if errB != nil {
					t.Fatalf("turn B (healthy context) failed with turn A's cancellation: %v", errB)
				}
				if toolsB["echo"] == nil {
					t.Errorf("turn B's tools = %v, want the server's", toolsB)
				}
				if required && errA == nil {
					t.Error("turn A was cancelled but its discovery succeeded")
				}
				// B waited 50ms for A's discovery, then ran its own (300ms list).
				if tookB > 5*time.Second {
					t.Errorf("turn B took %s, beyond its budget", tookB)
				}
				// B's invocation remembers no failure and states nothing missing.
				if _, err := discover(t, t.Context(), g, "inv-B"); err != nil {
					t.Errorf("turn B's invocation remembered a failure: %v", err)
				}
				if h := g.Health()[0]; h.Outcome != mcpguard.ClassOK {
					t.Errorf("health outcome = %s, want ok", h.Outcome)
				}
			})
		})
	}
}

// TestJoinedDialSurvivesLeaderCancel: after a server restart, call A starts
// the reconnect and is cancelled; call B joined that dial. B dials for
// itself and its (not idempotent) call runs exactly once.
func TestJoinedDialSurvivesLeaderCancel(t *testing.T) {
	forProtocols(t, func(t *testing.T, p protocol) { joinedDialSurvivesLeaderCancel(t, p) })
}

func joinedDialSurvivesLeaderCancel(t *testing.T, p protocol) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(p.config(mcpfault.Config{}))
		defer fs.Close()
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "pay", Dial: fs.Dial, OperationBudget: 5 * time.Second}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv")
		if err != nil {
			t.Fatal(err)
		}
		fs.DropConnections()
		synctest.Wait()
		fs.SetLatency(mcpfault.Handshake, 300*time.Millisecond)

		ctxA, cancelA := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		var errA, errB error
		var outB map[string]any
		wg.Go(func() { _, errA = tools["charge"].Run(newToolCtx(ctxA), map[string]any{"amount": 1}) })
		time.Sleep(50 * time.Millisecond)
		wg.Go(func() { outB, errB = tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 2}) })
		time.Sleep(50 * time.Millisecond)
		cancelA()
		wg.Wait()
		if errB != nil {
			t.Fatalf("call B (healthy context) failed with call A's cancellation: %v", errB)
		}
		if outB[mcpguard.KeyOutput] == nil {
			t.Errorf("call B's result = %v", outB)
		}
		if e := asError(t, errA); e.Class != mcpguard.ClassCancelled {
			t.Errorf("call A: class = %s, want cancelled", e.Class)
		}
		if n := fs.Executions("charge"); n != 1 {
			t.Errorf("charge executed %d times, want 1 (call B)", n)
		}
	})
}

// TestNoBudgetRatio: with NoBudgetRatio only BudgetMin retries are allowed
// per window, however many operations fail; a zero BudgetRatio alone still
// means the default ratio; a ratio together with NoBudgetRatio is rejected.
func TestNoBudgetRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer fs.Close()
		reg := testRegistry(t, registry.WithPolicy("down", registry.Policy{ConsecutiveFailures: math.MaxInt32, DisableFailureRate: true}))
		g := mcpguard.MustNew(reg, []mcpguard.Server{{
			Name: "down", Dial: fs.Dial,
			Retry: mcpguard.Retry{MaxAttempts: 5, Base: time.Millisecond, Cap: time.Millisecond, BudgetMin: 2, NoBudgetRatio: true},
		}})
		defer g.Close()
		for range 200 {
			_ = g.Start(t.Context())
		}
		if r := g.Health()[0].Retries; r != 2 {
			t.Errorf("retries = %d for 200 failing operations in one window, want BudgetMin = 2", r)
		}
	})
	if r := (mcpguard.Retry{}).WithDefaults(); r.BudgetRatio != mcpguard.DefaultBudgetRatio {
		t.Errorf("zero BudgetRatio defaults to %v, want %v", r.BudgetRatio, mcpguard.DefaultBudgetRatio)
	}
	if r := (mcpguard.Retry{NoBudgetRatio: true}).WithDefaults(); r.BudgetRatio != 0 {
		t.Errorf("NoBudgetRatio: ratio = %v, want 0", r.BudgetRatio)
	}
	err := mcpguard.Server{Name: "x", Dial: (&mcpfault.Server{}).Dial, Retry: mcpguard.Retry{BudgetRatio: 0.5, NoBudgetRatio: true}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "retry.budget_ratio: must be 0 with retry.no_budget_ratio") {
		t.Errorf("Validate = %v, want the contradiction reported", err)
	}
}
