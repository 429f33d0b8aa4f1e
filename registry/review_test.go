package registry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// Regression tests for three findings of the hot-path review.

// A shadow-mode breaker with a health check: once the check holds the probe
// slot, the next call is a shadow refusal (an empty ticket), which must not
// start a second health check on it (it dereferenced a nil record).
func TestShadowHealthCheckBusyProbe(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	block := make(chan struct{})
	defer close(block)
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true,
	}), registry.WithHealthCheck("db", func(context.Context) error { <-block; return nil }))
	b, _ := reg.Get("db")
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	clk.Advance(11 * time.Second)
	b.Reserve() // the health check takes the probe slot
	_, d := b.Reserve()
	if !d.Shadow || d.Reason != registry.RefusedProbeBusy {
		t.Fatalf("second call while the health check runs: %+v", d)
	}
	if n := b.ContainCounts().HealthChecks; n != 1 {
		t.Fatalf("%d health checks started, want 1", n)
	}
}

// An ordinary call admitted on the slow path (after a bulkhead wait) is not
// a probe: its owner must count its outcome and may evict it.
func TestSlowPathClosedReservationIsNotAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{
			MaxConcurrent: 1, QueueWait: time.Second, DisableSlowInFlight: true,
		}))
		b, _ := reg.Get("db")
		first, d := b.Reserve()
		if !d.Allowed || first.Probe() {
			t.Fatalf("first: %+v", d)
		}
		go func() {
			time.Sleep(10 * time.Millisecond)
			first.Report(registry.Success, 0)
		}()
		second, d := b.Reserve() // waits for the slot: the slow path
		if !d.Allowed || d.State != registry.StateClosed || second.Probe() {
			t.Fatalf("second: %+v probe=%v, want an ordinary closed-state call", d, second.Probe())
		}
		second.Report(registry.Failure, 0)
		if got := b.Reported(); got[registry.Failure] != 1 {
			t.Fatalf("reported = %v: the failure was not counted", got)
		}
	})
}

// A call admitted on the contained fast path after a Reset carries the
// current generation, so its retry hint still opens the breaker (as the
// last of RetryHintFailures hinted failures in a row).
func TestHintAfterResetOnTheContainedPath(t *testing.T) {
	for _, mc := range []int{0, 4} {
		reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 100, DisableFailureRate: true, MaxConcurrent: mc}))
		b, _ := reg.Get("db")
		b.Reset()
		for range registry.DefaultRetryHintFailures {
			var r registry.Reservation
			if !b.TryReserve(&r) {
				t.Fatal("not admitted")
			}
			r.Report(registry.Failure, 30*time.Second)
		}
		if st := b.Status(); st.State != registry.StateOpen || st.Cause != registry.CauseRetryHint {
			t.Errorf("max_concurrent %d: the retry hint of a call admitted after Reset was dropped", mc)
		}
	}
}
