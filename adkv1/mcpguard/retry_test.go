package mcpguard_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestAtMostOnce (R4): a tool that is not allowlisted is sent at most once by
// this layer when the connection drops mid-call (server-side counter); an
// allowlisted one is retried within the budget.
func TestAtMostOnce(t *testing.T) {
	forProtocols(t, atMostOnce)
}

func atMostOnce(t *testing.T, p protocol) {
	for _, tc := range []struct {
		name       string
		tool       string
		idempotent []string
		trusted    bool
		mode       mcpfault.Mode
		recover    int
		wantExecs  int
		wantOK     bool
		attempts   int
	}{
		{"truncated/not_allowlisted", "charge", nil, false, mcpfault.Truncated, 0, 1, false, 1},
		{"truncated/allowlisted", "charge", []string{"charge"}, false, mcpfault.Truncated, 0, 3, false, 3},
		{"truncated/hint_untrusted", "echo", nil, false, mcpfault.Truncated, 0, 1, false, 1},
		{"truncated/hint_trusted", "echo", nil, true, mcpfault.Truncated, 0, 3, false, 3},
		{"dropped/not_allowlisted", "charge", nil, false, mcpfault.Dropped, 0, 1, false, 1},
		{"dropped/allowlisted", "charge", []string{"charge"}, false, mcpfault.Dropped, 0, 3, false, 3},
		{"flapping/not_allowlisted", "charge", nil, false, mcpfault.Flapping, 1, 0, false, 1},
		{"flapping/allowlisted_recovers", "charge", []string{"charge"}, false, mcpfault.Flapping, 1, 1, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(p.config(mcpfault.Config{RecoverAfter: tc.recover}))
				defer fs.Close()
				g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
					Name: "pay", Dial: fs.Dial, IdempotentTools: tc.idempotent, Trusted: tc.trusted,
					OperationBudget: 15 * time.Second,
				}})
				defer g.Close()
				tools, err := discover(t, t.Context(), g, "inv")
				if err != nil {
					t.Fatal(err)
				}
				fs.SetMode(tc.mode)
				start := time.Now()
				out, err := tools[tc.tool].Run(newToolCtx(t.Context()), map[string]any{"amount": 5, "text": "x"})
				if got := fs.Executions(tc.tool); got != tc.wantExecs {
					t.Errorf("server executed %s %d times, want %d", tc.tool, got, tc.wantExecs)
				}
				if tc.wantOK {
					if err != nil {
						t.Fatalf("err = %v, want a result after the retry", err)
					}
					if out[mcpguard.KeyOutput] == nil {
						t.Errorf("out = %v", out)
					}
				} else {
					e := asError(t, err)
					if e.Attempts != tc.attempts {
						t.Errorf("attempts = %d, want %d (%v)", e.Attempts, tc.attempts, e)
					}
				}
				if h := g.Health()[0]; int(h.Retries) != tc.attempts-1 {
					t.Errorf("health retries = %d, want %d", h.Retries, tc.attempts-1)
				}
				if el := time.Since(start); el > 15*time.Second {
					t.Errorf("took %s, beyond the budget", el)
				}
			})
		})
	}
}

// lockedRand is a seeded, concurrency-safe source for WithRand.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

// TestBackoffLivePath: the delays the guard really waits come from the
// injected source, follow full jitter, and are waited out exactly.
func TestBackoffLivePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer fs.Close()
		reg := testRegistry(t, registry.WithPolicy("down", registry.Policy{ConsecutiveFailures: math.MaxInt32, DisableFailureRate: true}))
		var mu sync.Mutex
		delays := map[int][]time.Duration{}
		src := &lockedRand{r: rand.New(rand.NewPCG(7, 7))}
		base, cap := 100*time.Millisecond, 2*time.Second
		g := mcpguard.MustNew(reg, []mcpguard.Server{{
			Name: "down", Dial: fs.Dial, Required: true,
			Retry: mcpguard.Retry{MaxAttempts: 3, Base: base, Cap: cap, BudgetMin: 1 << 30},
		}}, mcpguard.WithRand(src.Float64), mcpguard.WithBackoffObserver(func(_ string, n int, d time.Duration) {
			mu.Lock()
			delays[n] = append(delays[n], d)
			mu.Unlock()
		}))
		defer g.Close()
		const ops = 2000
		var waited time.Duration
		for range ops {
			start := time.Now()
			if err := g.Start(t.Context()); err == nil {
				t.Fatal("unreachable server started")
			}
			waited += time.Since(start)
		}
		var total time.Duration
		for n, ds := range delays {
			if len(ds) != ops {
				t.Errorf("retry %d: %d delays, want %d", n, len(ds), ops)
			}
			ceil := min(cap, base<<n)
			for _, d := range ds {
				total += d
				if d < 0 || d >= ceil {
					t.Fatalf("retry %d: delay %s outside [0, %s)", n, d, ceil)
				}
			}
			if d := ks(ds, ceil); d > 1.628/math.Sqrt(float64(len(ds))) {
				t.Errorf("retry %d: KS D=%.4f: live delays are not full jitter", n, d)
			}
		}
		if waited != total {
			t.Errorf("waited %s in total, the decided delays sum to %s", waited, total)
		}
	})
}

func ks(samples []time.Duration, ceil time.Duration) float64 {
	xs := slices.Clone(samples)
	slices.Sort(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := float64(x) / float64(ceil)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

// TestRetryBudgetLive (R2): with 100% failures, retries stay within 20% of
// operations (plus the minimum), however many attempts each may make.
func TestRetryBudgetLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer fs.Close()
		reg := testRegistry(t, registry.WithPolicy("down", registry.Policy{ConsecutiveFailures: math.MaxInt32, DisableFailureRate: true}))
		g := mcpguard.MustNew(reg, []mcpguard.Server{{
			Name: "down", Dial: fs.Dial,
			Retry: mcpguard.Retry{MaxAttempts: 5, Base: time.Millisecond, Cap: time.Millisecond},
		}})
		defer g.Close()
		const ops = 1000
		for range ops {
			_ = g.Start(t.Context())
		}
		r := g.Health()[0].Retries
		if limit := uint64(mcpguard.DefaultBudgetMin + mcpguard.DefaultBudgetRatio*ops); r > limit {
			t.Errorf("retries = %d for %d operations, budget allows %d", r, ops, limit)
		} else {
			t.Logf("retries = %d for %d operations (ratio %.3f)", r, ops, float64(r)/ops)
		}
	})
}

// TestNoRetryWithoutTime (R3): a retry is not started unless its backoff
// still leaves MinLeg of the budget.
func TestNoRetryWithoutTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
		defer fs.Close()
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{
			Name: "down", Dial: fs.Dial, Required: true, OperationBudget: time.Second,
			Retry: mcpguard.Retry{MaxAttempts: 5, Base: 600 * time.Millisecond, Cap: 600 * time.Millisecond},
		}}, mcpguard.WithRand(func() float64 { return 0.99 }))
		defer g.Close()
		start := time.Now()
		e := asError(t, g.Start(t.Context()))
		// 594ms backoff leaves 406ms; a second 594ms one would not leave 50ms.
		if e.Attempts != 2 || time.Since(start) != 594*time.Millisecond {
			t.Errorf("attempts = %d after %s, want 2 after 594ms", e.Attempts, time.Since(start))
		}
	})
}
