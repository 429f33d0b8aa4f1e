package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestShadowModeAdmitsEveryCallAndCountsWouldBeRefusals: a shadow breaker
// trips, holds and probes exactly as an enforcing one, but admits the calls
// it would have refused, with an invalid ticket (their outcomes are not
// counted, as if refused), and counts them.
func TestShadowModeAdmitsEveryCallAndCountsWouldBeRefusals(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 2, OpenFor: 10 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true,
	}))
	b, err := reg.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tk, d := b.Admit()
		if !d.Allowed || d.Shadow || !tk.Valid() {
			t.Fatalf("closed: %+v", d)
		}
		tk.Done(registry.Failure)
	}
	if b.State() != registry.StateOpen {
		t.Fatalf("state = %v, want open: shadow mode still trips", b.State())
	}
	for i := range 5 {
		tk, d := b.Admit()
		if !d.Allowed || !d.Shadow || d.Reason != registry.RefusedOpen || d.RetryAfter != 10*time.Second || tk.Valid() {
			t.Fatalf("would-be refusal %d: %+v valid=%v", i, d, tk.Valid())
		}
		if tk.Done(registry.Success) {
			t.Fatal("a shadow-admitted call's outcome was counted")
		}
		r, d2 := b.Reserve()
		if !d2.Shadow || r.Valid() {
			t.Fatalf("Reserve: %+v valid=%v", d2, r.Valid())
		}
	}
	if c := b.Counts(); c.ShadowRefusals != 10 || c.ShortCircuits != 0 {
		t.Fatalf("counts = %+v, want 10 shadow refusals and no short-circuits", c)
	}
	if b.State() != registry.StateOpen {
		t.Fatal("shadow-admitted successes closed the breaker")
	}

	clk.Advance(10 * time.Second)
	probe, d := b.Admit()
	if !d.Allowed || d.Shadow || !probe.Probe() {
		t.Fatalf("after the hold: %+v (a real probe expected)", d)
	}
	if _, d := b.Admit(); !d.Shadow || d.Reason != registry.RefusedProbeBusy {
		t.Fatalf("while the probe is out: %+v", d)
	}
	probe.Done(registry.Success)
	if b.State() != registry.StateClosed {
		t.Fatalf("state = %v after the probe succeeded", b.State())
	}
}
