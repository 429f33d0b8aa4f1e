package registry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

func TestSmoke(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1000, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 10 * time.Second, NoJitter: true, ProbeLease: 5 * time.Second}))
	var mu sync.Mutex
	var got []string
	r.Subscribe(func(tr registry.Transition) { mu.Lock(); got = append(got, tr.From.String()+">"+tr.To.String()+":"+tr.Cause.String()); mu.Unlock() })
	b, _ := r.Get("svc")
	for i := 0; i < 3; i++ {
		tk, d := b.Admit()
		if !d.Allowed {
			t.Fatalf("call %d refused", i)
		}
		tk.Done(registry.Failure)
		if !(tk.Done(registry.Failure) == false) {
			t.Fatal("double done counted")
		}
	}
	_, d := b.Admit()
	if d.Allowed || d.Reason != registry.RefusedOpen || d.RetryAfter != 10*time.Second {
		t.Fatalf("want open 10s, got %+v", d)
	}
	clk.Advance(10 * time.Second)
	var wg sync.WaitGroup
	var admitted int
	var probe registry.Ticket
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, d := b.Admit()
			if d.Allowed {
				mu.Lock(); admitted++; probe = tk; mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 1 {
		t.Fatalf("admitted %d probes", admitted)
	}
	_ = probe
	// lose the probe: lease expiry re-opens with grown hold (20s)
	clk.Advance(5 * time.Second)
	if st := b.State(); st != registry.StateOpen {
		t.Fatalf("after lease: %v", st)
	}
	if ra := b.RetryAfter(); ra != 20*time.Second {
		t.Fatalf("retry after %v", ra)
	}
	if probe.Done(registry.Success) {
		t.Fatal("late probe report accepted")
	}
	clk.Advance(20 * time.Second)
	tk, d := b.Admit()
	if !d.Allowed || !tk.Probe() {
		t.Fatalf("want probe, got %+v", d)
	}
	tk.Done(registry.Success)
	if b.State() != registry.StateClosed {
		t.Fatal("not closed")
	}
	r.Flush(t.Context())
	mu.Lock(); defer mu.Unlock()
	t.Log(got)
	want := "[closed>open:trip open>half_open:hold_expired half_open>open:lease_expired open>half_open:hold_expired half_open>closed:probe_succeeded]"
	if s := fmtS(got); s != want {
		t.Fatalf("got %s", s)
	}
}

func fmtS(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
