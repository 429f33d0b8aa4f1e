package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestRefusalsByReason: every refusal is counted under its reason, and the
// reasons sum to Counts.ShortCircuits.
func TestRefusalsByReason(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy("svc", registry.Policy{
		ConsecutiveFailures: 1, NoJitter: true, MaxConcurrent: 1,
	}))
	b, _ := reg.Get("svc")
	held, _ := b.Admit() // fills the bulkhead
	if _, d := b.Admit(); d.Reason != registry.RefusedSaturated {
		t.Fatalf("second call: %+v, want saturated", d)
	}
	held.Done(registry.Failure) // trips
	for range 3 {
		if _, d := b.Admit(); d.Reason != registry.RefusedOpen {
			t.Fatalf("after the trip: %+v", d)
		}
	}
	b.Isolate()
	b.Admit()
	got := b.Refusals()
	want := [registry.NumRefusals]uint64{registry.RefusedOpen: 3, registry.RefusedIsolated: 1, registry.RefusedSaturated: 1}
	if got != want {
		t.Errorf("Refusals = %v, want %v", got, want)
	}
	if n := b.Counts().ShortCircuits; n != 5 {
		t.Errorf("ShortCircuits = %d, want the 5 refusals", n)
	}
}

// TestLastTripKeepsTheTrippingWindow: the open state starts with fresh
// counts, but LastTrip keeps the window that tripped, with its time and
// cause; a probe's re-open does not replace it.
func TestLastTripKeepsTheTrippingWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := registrytest.NewFakeClock(t0)
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 3, OpenFor: 10 * time.Second, NoJitter: true,
	}))
	b, _ := reg.Get("svc")
	if _, ok := b.LastTrip(); ok {
		t.Fatal("a new breaker has a trip")
	}
	for _, o := range []registry.Outcome{registry.Success, registry.Success, registry.Excluded, registry.Failure, registry.Failure} {
		tk, _ := b.Admit()
		tk.Done(o)
	}
	clk.Advance(time.Second)
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	if b.State() != registry.StateOpen || b.Counts().Failures != 0 {
		t.Fatalf("state %v counts %+v: want open with fresh counts", b.State(), b.Counts())
	}
	tr, ok := b.LastTrip()
	want := registry.Counts{Requests: 6, Successes: 2, Failures: 3, Exclusions: 1, ConsecutiveFailures: 3}
	if !ok || tr.Window != want || tr.Cause != registry.CauseTrip || !tr.At.Equal(t0.Add(time.Second)) {
		t.Errorf("LastTrip = %+v, %v; want %+v at t0+1s by trip", tr, ok, want)
	}
	clk.Advance(10 * time.Second)
	probe, d := b.Admit()
	if !d.Allowed || !probe.Probe() {
		t.Fatalf("no probe: %+v", d)
	}
	probe.Done(registry.Failure) // re-opens: not a trip from closed
	if again, _ := b.LastTrip(); again != tr {
		t.Errorf("a failed probe replaced the trip record: %+v", again)
	}
	b.Reset()
	b.Trip(time.Minute, registry.CauseRetryHint)
	if tr, _ := b.LastTrip(); tr.Cause != registry.CauseRetryHint || tr.Window.Failures != 1 {
		t.Errorf("a forced trip: %+v, want retry_hint with its own failure", tr)
	}
}

// TestSampleLatency: off by default; on, every call's latency lands in
// its bucket, for tickets and reservations alike; excluded calls are not
// measured.
func TestSampleLatency(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk))
	b, _ := reg.Get("svc")
	call := func(d time.Duration, o registry.Outcome) {
		tk, _ := b.Admit()
		clk.Advance(d)
		tk.Done(o)
		r, _ := b.Reserve()
		clk.Advance(d)
		r.Report(o, 0)
	}
	call(time.Second, registry.Success)
	if n := b.Latencies().Total(); n != 0 {
		t.Fatalf("%d samples with sampling off", n)
	}
	b.SampleLatency(1)
	for range 49 {
		call(20*time.Millisecond, registry.Success)
	}
	call(3*time.Second, registry.Failure)
	call(time.Hour, registry.Excluded)
	h := b.Latencies()
	if n := h.Total(); n != 100 {
		t.Fatalf("%d samples, want 100 (excluded calls are not measured)", n)
	}
	if p50 := h.Quantile(0.5); p50 < 20*time.Millisecond || p50 > 30*time.Millisecond {
		t.Errorf("p50 = %v, want about 20ms", p50)
	}
	if p99 := h.Quantile(0.99); p99 < 3*time.Second || p99 > 4*time.Second {
		t.Errorf("p99 = %v, want about 3s", p99)
	}
	before := h
	b.SampleLatency(0)
	call(time.Second, registry.Success)
	if d := b.Latencies().Sub(before).Total(); d != 0 {
		t.Errorf("%d samples after sampling was switched off", d)
	}
	b.SampleLatency(1 << 20) // one in about a million: some calls are skipped
	for range 64 {
		call(time.Millisecond, registry.Success)
	}
	if d := b.Latencies().Sub(before).Total(); d > 8 {
		t.Errorf("%d of 128 calls sampled at one in a million", d)
	}
}

// TestLatencyBuckets: a call's bucket bound is at or above its latency and
// less than twice it.
func TestLatencyBuckets(t *testing.T) {
	for _, d := range []time.Duration{0, 500 * time.Nanosecond, time.Microsecond, 3 * time.Microsecond, 7 * time.Millisecond,
		20 * time.Millisecond, 1500 * time.Millisecond, time.Minute} {
		clk := registrytest.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		b, _ := registry.MustNew(registry.WithClock(clk)).Get("svc")
		b.SampleLatency(1)
		tk, _ := b.Admit()
		clk.Advance(d)
		tk.Done(registry.Success)
		q := b.Latencies().Quantile(1)
		if q < d || (d > time.Microsecond && q >= d*2) {
			t.Errorf("%v: bucket bound %v", d, q)
		}
	}
}

// TestClosedPathAllocations: latency sampling adds no allocation to the
// closed path (the one there is gobreaker's).
func TestClosedPathAllocations(t *testing.T) {
	reg := registry.MustNew()
	b, _ := reg.Get("svc")
	run := func() float64 {
		return testing.AllocsPerRun(200, func() {
			tk, _ := b.Admit()
			tk.Done(registry.Success)
			var r registry.Reservation
			if b.TryReserve(&r) {
				r.Report(registry.Success, 0)
			}
		})
	}
	off := run()
	b.SampleLatency(1)
	on := run()
	if off > 2 || on != off {
		t.Errorf("allocations per ticket and reservation: %v with sampling off, %v on", off, on)
	}
}
