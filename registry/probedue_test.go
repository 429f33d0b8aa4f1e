package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// A probe's client deadline (SetProbeDeadline) bounds the wait of the calls
// refused while it is out, as its lease does; moving it moves the wait, the
// zero time forgets it, and an ordinary call's is ignored.
func TestSetProbeDeadline(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy("dep", registry.Policy{
		ConsecutiveFailures: 1, OpenFor: time.Minute, ProbeLease: 5 * time.Minute, HalfOpenProbes: 1,
	}))
	b, err := reg.Get("dep")
	if err != nil {
		t.Fatal(err)
	}
	ord, d := b.Reserve()
	if !d.Allowed {
		t.Fatal("closed breaker refused")
	}
	ord.SetProbeDeadline(clk.Now().Add(time.Second)) // not a probe: ignored
	ord.Report(registry.Failure, 0)
	clk.Advance(b.RetryAfter()) // the hold, jitter included
	probe, d := b.Reserve()
	if !d.Allowed || !probe.Probe() {
		t.Fatalf("no probe: %+v", d)
	}
	if w := b.RetryAfter(); w != 5*time.Minute {
		t.Fatalf("probe out, no deadline: retry after %v, want the 5m lease", w)
	}
	probe.SetProbeDeadline(clk.Now().Add(30 * time.Second))
	clk.Advance(10 * time.Second)
	if w := b.RetryAfter(); w != 20*time.Second {
		t.Errorf("retry after %v, want the 20s left of the probe's deadline", w)
	}
	if _, d := b.Reserve(); d.Allowed || d.RetryAfter != 20*time.Second {
		t.Errorf("refused call: %+v, want retry after 20s", d)
	}
	probe.SetProbeDeadline(clk.Now().Add(time.Hour)) // past the lease: the lease bounds
	if w := b.RetryAfter(); w != 4*time.Minute+50*time.Second {
		t.Errorf("deadline past the lease: retry after %v, want the lease's 4m50s", w)
	}
	probe.SetProbeDeadline(time.Time{})
	if w := b.RetryAfter(); w != 4*time.Minute+50*time.Second {
		t.Errorf("deadline forgotten: retry after %v, want the lease's 4m50s", w)
	}
	probe.Report(registry.Success, 0)
	if st := b.State(); st != registry.StateClosed {
		t.Errorf("state %v after the probe succeeded", st)
	}
}
