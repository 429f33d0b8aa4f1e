package registry_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// While a probe is out, a refused call is told the time the probe is
// expected still to take — the p99 of the dependency's healthy latency less
// the time the probe has run, at least MinProbeRetryAfter, at most the
// probe's timeout — not the probe's timeout itself (a model endpoint's
// 5-minute lease: before, a call turned away during a 0.8 s probe was told
// to come back in about 300 s).
func TestProbeRetryAfterFollowsObservedLatency(t *testing.T) {
	const lease = 5 * time.Minute
	pol := registry.Policy{OpenFor: 30 * time.Second, NoJitter: true, ProbeLease: lease, DisableSlowInFlight: true}
	busy := func(t *testing.T, b *registry.Breaker, want time.Duration) {
		t.Helper()
		_, d := b.Reserve()
		if d.Allowed || d.Reason != registry.RefusedProbeBusy || d.RetryAfter != want {
			t.Fatalf("call while the probe is out: %+v, want half_open_busy retry after %v", d, want)
		}
		if w := b.RetryAfter(); w != want {
			t.Fatalf("RetryAfter = %v, want %v", w, want)
		}
		if s := b.Status(); s.RetryAfter != want || s.State != halfOpen {
			t.Fatalf("Status: %v retry after %v, want half_open %v", s.State, s.RetryAfter, want)
		}
	}
	probeOut := func(t *testing.T, b *registry.Breaker, clk interface{ Advance(time.Duration) }) registry.Reservation {
		t.Helper()
		trip(t, b)
		clk.Advance(30 * time.Second)
		p := mustReserve(t, b)
		if !p.Probe() {
			t.Fatal("the first call after the hold is not a probe")
		}
		return p
	}

	t.Run("0.8s calls: about 1s, not the 5m lease", func(t *testing.T) {
		clk, _, b := newBreaker(t, pol)
		for range 10 {
			b.ObserveLatency(800 * time.Millisecond)
		}
		p := probeOut(t, b, clk)
		clk.Advance(300 * time.Millisecond)
		busy(t, b, registry.MinProbeRetryAfter) // p99 ≈ 0.86 s less 0.3 s, floored at 1 s
		clk.Advance(10 * time.Second)
		busy(t, b, registry.MinProbeRetryAfter) // past its expected time: still running
		p.Report(success, 0)
		wantState(t, b, closed, 0)
	})

	t.Run("8s calls: expected less elapsed, then the floor, then the lease", func(t *testing.T) {
		clk, _, b := newBreaker(t, pol)
		for range 10 {
			b.ObserveLatency(8 * time.Second) // its quarter-octave bucket ends at 8.192 s
		}
		probeOut(t, b, clk)
		clk.Advance(3 * time.Second)
		busy(t, b, 8192*time.Millisecond-3*time.Second)
		clk.Advance(2 * time.Second)
		busy(t, b, 8192*time.Millisecond-5*time.Second)
		clk.Advance(lease - 5*time.Second - 400*time.Millisecond)
		busy(t, b, 400*time.Millisecond) // the lease is nearer than the floor
	})

	t.Run("too few samples: the probe timeout", func(t *testing.T) {
		clk, _, b := newBreaker(t, pol)
		for range 7 {
			b.ObserveLatency(800 * time.Millisecond)
		}
		b.ObserveLatency(0)
		b.ObserveLatency(-time.Second)
		probeOut(t, b, clk)
		clk.Advance(time.Second)
		busy(t, b, lease-time.Second)
	})

	t.Run("tool: the slowness detector's samples", func(t *testing.T) {
		// A tool's breaker measures healthy latency itself for its derived
		// in-flight slowness threshold; the same tail is the estimate.
		clk, _, b := newBreaker(t, registry.Policy{OpenFor: 30 * time.Second, NoJitter: true, CallTimeout: 30 * time.Second})
		for range 10 {
			r := mustReserve(t, b)
			clk.Advance(2 * time.Second) // quarter-octave bucket ending at 2.048 s
			r.Report(success, 0)
		}
		probeOut(t, b, clk)
		if pt := b.ProbeTimeout(); pt != 20*time.Second {
			t.Fatalf("probe timeout %v, want the derived threshold 20s (10 × 2s while learning)", pt)
		}
		clk.Advance(500 * time.Millisecond)
		busy(t, b, 2048*time.Millisecond-500*time.Millisecond)
	})

	t.Run("health check", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			var once sync.Once
			done := func() { once.Do(func() { close(release) }) }
			defer done() // a failed check must not leave the check blocked
			r := registry.MustNew(registry.WithDefaultPolicy(pol),
				registry.WithHealthCheck("svc", func(ctx context.Context) error { <-release; return nil }))
			b := mustGet(t, r, "svc")
			for range 10 {
				b.ObserveLatency(8 * time.Second)
			}
			trip(t, b)
			time.Sleep(30 * time.Second)
			_, d := b.Reserve() // starts the check, and is refused
			if d.Reason != registry.RefusedProbeBusy || d.RetryAfter != 8192*time.Millisecond {
				t.Fatalf("call that started the check: %+v, want half_open_busy retry after 8.192s", d)
			}
			time.Sleep(time.Second)
			busy(t, b, 7192*time.Millisecond)
			done()
			synctest.Wait()
			wantState(t, b, closed, 0)
		})
	})
}

// Reset drops the latencies a client reported (ObserveLatency): an
// operator's reset says the dependency changed, so the probe wait is the
// probe's timeout again until 8 calls were measured since. Before, the
// estimate learned before the reset stayed (the latency tail halves only
// every 1024 samples), and callers were told 1 s for a dependency that may
// now be much slower.
func TestResetDropsObservedLatency(t *testing.T) {
	const lease = 5 * time.Minute
	pol := registry.Policy{OpenFor: 30 * time.Second, NoJitter: true, ProbeLease: lease, DisableSlowInFlight: true}
	clk, _, b := newBreaker(t, pol)
	for range 10 {
		b.ObserveLatency(800 * time.Millisecond)
	}
	probeWait := func() time.Duration {
		t.Helper()
		trip(t, b)
		clk.Advance(30 * time.Second)
		if p := mustReserve(t, b); !p.Probe() {
			t.Fatal("the first call after the hold is not a probe")
		}
		clk.Advance(300 * time.Millisecond)
		_, d := b.Reserve()
		if d.Allowed || d.Reason != registry.RefusedProbeBusy {
			t.Fatalf("call while the probe is out: %+v, want half_open_busy", d)
		}
		return d.RetryAfter
	}
	if w := probeWait(); w != registry.MinProbeRetryAfter {
		t.Fatalf("before the reset: retry after %v, want %v (0.8 s calls)", w, registry.MinProbeRetryAfter)
	}
	b.Reset()
	if w := probeWait(); w != lease-300*time.Millisecond {
		t.Fatalf("after the reset: retry after %v, want the probe's remaining timeout %v", w, lease-300*time.Millisecond)
	}
	b.Reset()
	for range 8 {
		b.ObserveLatency(8 * time.Second) // quarter-octave bucket ending at 8.192 s
	}
	if w, want := probeWait(), 8192*time.Millisecond-300*time.Millisecond; w != want {
		t.Fatalf("8 calls measured since the reset: retry after %v, want %v", w, want)
	}
}
