package failover_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestProbeWaitIsTheBreakersToo: while a model endpoint's probe is out and
// its latency is not known yet, a call turned away is told what remains of
// the probe's first-output deadline — and so is everyone who reads the
// breaker (Model.Status, the status page, the retry_after gauge), where the
// breaker said what remained of its 5-minute probe lease.
func TestProbeWaitIsTheBreakersToo(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(append(failover.PolicyOptions("model:primary", fallbackKey), registry.WithClock(clk))...)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	primary := newFake("primary-model", step{block: gate, entered: entered, chunks: []string{"from primary"}})
	var events eventLog
	m, err := failover.New("chat", reg, []failover.Endpoint{
		{LLM: primary, Key: "model:primary", FirstOutputTimeout: 30 * time.Second},
		{LLM: newFake("fallback-model", answer("from fallback")), Key: fallbackKey},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)), failover.WithLogInterval(-1), failover.WithOnFailover(events.add))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	timers := newFakeTimers()
	failover.SetStallTimers(m, timers.start)
	b, err := reg.Get("model:primary")
	if err != nil {
		t.Fatal(err)
	}
	b.Trip(time.Minute, registry.CauseTrip)
	clk.Advance(time.Minute)

	probe := runAsync(t.Context(), m, false)
	<-entered
	clk.Advance(10 * time.Second)
	turned := run(t.Context(), m, userReq("hi"), false)
	if got := meta(turned.last(), failover.AttrFailoverReason); got != "circuit_open" || turned.text() != "from fallback" {
		t.Fatalf("turned-away call: reason %v answer %q", got, turned.text())
	}
	const want = 20 * time.Second // the 30s first-output deadline less the 10s the probe ran
	if ev := events.last(t); ev.RetryAfter != want {
		t.Errorf("failover event: retry after %v, want %v", ev.RetryAfter, want)
	}
	if w := m.Status()[0].Breaker.RetryAfter; w != want {
		t.Errorf("Status: primary's breaker retry after %v, want the %v failover reported", w, want)
	}
	if w := b.RetryAfter(); w != want {
		t.Errorf("Breaker.RetryAfter %v, want %v", w, want)
	}
	close(gate)
	if p := <-probe; p.text() != "from primary" {
		t.Fatalf("probe answered %q %v", p.text(), p.err())
	}
	if st := b.State(); st != registry.StateClosed {
		t.Errorf("primary %v after its probe succeeded", st)
	}
}
