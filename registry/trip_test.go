package registry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

func TestTripOpensAClosedBreakerForTheHint(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{OpenFor: 5 * time.Second, NoJitter: true}))
	var mu sync.Mutex
	var got []registry.Transition
	r.Subscribe(func(tr registry.Transition) { mu.Lock(); got = append(got, tr); mu.Unlock() })
	b, _ := r.Get("model:primary")
	b.Trip(30*time.Second, registry.CauseRetryHint)
	if st, ra := b.State(), b.RetryAfter(); st != registry.StateOpen || ra != 30*time.Second {
		t.Fatalf("after Trip(30s): %v, retry after %v", st, ra)
	}
	if _, d := b.Admit(); d.Allowed {
		t.Fatal("admitted while tripped")
	}
	clk.Advance(30 * time.Second)
	tk, d := b.Admit()
	if !d.Allowed || !tk.Probe() {
		t.Fatalf("after the hold: %+v", d)
	}
	tk.Done(registry.Success)
	if b.State() != registry.StateClosed {
		t.Fatalf("probe success did not close: %v", b.State())
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].Cause != registry.CauseRetryHint || got[0].To != registry.StateOpen || got[0].RetryAfter != 30*time.Second {
		t.Fatalf("transitions = %+v", got)
	}
}

func TestTripHoldIsTheHint(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Minute, NoJitter: true}))
	b, _ := r.Get("k")
	b.Trip(20*time.Second, registry.CauseQuotaExhausted)
	if ra := b.RetryAfter(); ra != 20*time.Second {
		t.Fatalf("retry after = %v, want the 20s hint, not the 1m policy hold", ra)
	}
	b.Trip(2*time.Hour, registry.CauseQuotaExhausted) // already open: extends, capped at MaxRetryHint (1h)
	if ra := b.RetryAfter(); ra != time.Hour {
		t.Fatalf("retry after = %v, want capped 1h", ra)
	}
}

func TestTripDuringHalfOpenFailsTheProbe(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, OpenBackoff: 1, NoJitter: true}))
	b, _ := r.Get("k")
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	clk.Advance(10 * time.Second)
	probe, d := b.Admit()
	if !d.Allowed {
		t.Fatal("no probe")
	}
	b.Trip(45*time.Second, registry.CauseRetryHint)
	if st, ra := b.State(), b.RetryAfter(); st != registry.StateOpen || ra != 45*time.Second {
		t.Fatalf("after Trip in half-open: %v %v", st, ra)
	}
	if probe.Done(registry.Success) {
		t.Fatal("the failed probe's late success was accepted")
	}
	if b.PendingProbes() != 0 {
		t.Fatal("probe left pending")
	}
}

func TestTripIsolatedRecordsFloorOnly(t *testing.T) {
	r := registry.MustNew()
	b, _ := r.Get("k")
	b.Isolate()
	b.Trip(time.Minute, registry.CauseRetryHint)
	if st := b.Status(); !st.Isolated {
		t.Fatal("Trip ended isolation")
	}
}
