package registry_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/google/go-cmp/cmp"
)

// B10: retry_after equals the remaining hold (open) or the remaining lease
// (half-open, all probe slots taken), exactly, at random moments.
func TestRetryAfterAccuracy(t *testing.T) {
	const (
		hold  = 30 * time.Second
		lease = 7 * time.Second
	)
	rng := rand.New(rand.NewPCG(1, 2))
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: hold, OpenBackoff: 1, NoJitter: true, ProbeLease: lease})
	for round := range 200 {
		b.Reset()
		trip(t, b)
		openedAt := clk.Now()
		// Open: random points within the hold.
		for range 5 {
			clk.Set(openedAt.Add(time.Duration(rng.Int64N(int64(hold)))))
			want := openedAt.Add(hold).Sub(clk.Now())
			_, d := b.Admit()
			if d.Allowed || d.Reason != registry.RefusedOpen || d.RetryAfter != want {
				t.Fatalf("round %d open: decision %+v, want refused with %v", round, d, want)
			}
			if got := b.RetryAfter(); got != want {
				t.Fatalf("round %d open: RetryAfter %v, want %v", round, got, want)
			}
			if d.Err("svc").(*registry.OpenError).RetryAfter != want {
				t.Fatal("OpenError.RetryAfter differs from the decision")
			}
		}
		// Half-open, busy: random points within the lease.
		clk.Set(openedAt.Add(hold + time.Duration(rng.Int64N(int64(time.Second)))))
		mustAdmit(t, b)
		probedAt := clk.Now()
		for range 5 {
			clk.Set(probedAt.Add(time.Duration(rng.Int64N(int64(lease)))))
			want := probedAt.Add(lease).Sub(clk.Now())
			_, d := b.Admit()
			if d.Allowed || d.Reason != registry.RefusedProbeBusy || d.State != halfOpen || d.RetryAfter != want {
				t.Fatalf("round %d half-open: decision %+v, want busy with %v", round, d, want)
			}
			if got := b.RetryAfter(); got != want {
				t.Fatalf("round %d half-open: RetryAfter %v, want %v", round, got, want)
			}
		}
	}
}

// With several probe slots, retry_after is zero while a slot is free, and
// the earliest lease once all are taken (and stays so after one of them
// succeeds: the episode's slots are spent until it decides).
func TestRetryAfterSeveralProbes(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, HalfOpenProbes: 3, ProbeLease: 9 * time.Second})
	trip(t, b)
	clk.Advance(10 * time.Second)
	p1 := mustAdmit(t, b)
	wantState(t, b, halfOpen, 0)
	clk.Advance(time.Second)
	mustAdmit(t, b)
	clk.Advance(time.Second)
	mustAdmit(t, b)
	wantState(t, b, halfOpen, 7*time.Second) // p1's lease
	p1.Done(success)
	wantState(t, b, halfOpen, 8*time.Second) // p2's lease
	if _, d := b.Admit(); d.Allowed || d.RetryAfter != 8*time.Second {
		t.Fatalf("Admit = %+v, want busy for 8s", d)
	}
}

func TestCapacity(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{}, registry.WithMaxBreakers(3))
	if r.Cap() != 3 {
		t.Fatalf("Cap = %d", r.Cap())
	}
	for _, k := range []registry.Key{"a", "b", "c"} {
		mustGet(t, r, k)
	}
	b, err := r.Get("d")
	if !errors.Is(err, registry.ErrCapacity) || b != nil {
		t.Fatalf("4th key: %v, %v; want ErrCapacity", b, err)
	}
	// Existing keys still resolve, to the same breaker.
	if b1, b2 := mustGet(t, r, "a"), mustGet(t, r, "a"); b1 != b2 {
		t.Fatal("Get returned two breakers for one key")
	}
	for i := range 10000 {
		if _, err := r.Get(registry.Key(fmt.Sprintf("flood-%d", i))); !errors.Is(err, registry.ErrCapacity) {
			t.Fatalf("flood key %d: %v", i, err)
		}
	}
	if r.Len() != 3 {
		t.Fatalf("Len = %d after flooding, want 3", r.Len())
	}
	if _, ok := r.Lookup("flood-1"); ok {
		t.Fatal("Lookup found a refused key")
	}
	if err := r.Isolate("flood-2"); !errors.Is(err, registry.ErrCapacity) {
		t.Fatalf("Isolate beyond the cap: %v", err)
	}
	r.Reset("never-created") // no-op
	if r.Len() != 3 {
		t.Fatalf("Len = %d", r.Len())
	}
}

// Keys with a policy of their own are always creatable: flooding the
// registry with other keys cannot lock a configured dependency out.
func TestCapacityReservesConfiguredKeys(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{}, registry.WithMaxBreakers(4),
		registry.WithPolicy("search", registry.Policy{ConsecutiveFailures: 2}),
		registry.WithPolicy("llm", registry.Policy{ConsecutiveFailures: 3}))
	var created int
	for i := range 100 {
		if _, err := r.Get(registry.Key(fmt.Sprintf("other-%d", i))); err == nil {
			created++
		} else if !errors.Is(err, registry.ErrCapacity) {
			t.Fatal(err)
		}
	}
	if created != 2 {
		t.Fatalf("%d unconfigured keys created, want 2 (cap 4 − 2 configured)", created)
	}
	for _, k := range []registry.Key{"search", "llm"} {
		b := mustGet(t, r, k)
		if b.Policy() != r.PolicyFor(k) {
			t.Errorf("%s: policy %+v, want %+v", k, b.Policy(), r.PolicyFor(k))
		}
	}
	if r.Len() != 4 {
		t.Fatalf("Len = %d, want 4", r.Len())
	}
}

func TestCapacityConcurrent(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{}, registry.WithMaxBreakers(50))
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[registry.Key]*registry.Breaker{}
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := registry.Key(fmt.Sprintf("k%d", (i*7+g)%100))
				b, err := r.Get(k)
				if err != nil {
					if !errors.Is(err, registry.ErrCapacity) {
						t.Error(err)
					}
					continue
				}
				mu.Lock()
				if prev, ok := got[k]; ok && prev != b {
					t.Errorf("two breakers for %s", k)
				}
				got[k] = b
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if r.Len() != 50 || len(got) != 50 {
		t.Fatalf("Len = %d, distinct = %d; want 50", r.Len(), len(got))
	}
}

func TestInvalidKeys(t *testing.T) {
	r := newRegistry(t, registrytest.NewFakeClock(t0), registry.Policy{})
	for _, k := range []registry.Key{
		"", registry.Key(strings.Repeat("x", registry.MaxKeyLen+1)), "bad\nkey", "tab\tkey", "del\x7f", "\xff\xfe",
	} {
		if k.Valid() {
			t.Errorf("Key(%q).Valid() = true", k)
		}
		if _, err := r.Get(k); !errors.Is(err, registry.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := r.Isolate(k); !errors.Is(err, registry.ErrInvalidKey) {
			t.Errorf("Isolate(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, k := range []registry.Key{"a", registry.Key(strings.Repeat("x", registry.MaxKeyLen)), "mcp:search/tool", "überall"} {
		if !k.Valid() {
			t.Errorf("Key(%q).Valid() = false", k)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("Len = %d", r.Len())
	}
}

// Isolate refuses everything; outcomes while isolated do not move the state;
// Reset gives a fresh closed breaker that ignores every earlier ticket.
func TestIsolateReset(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true, OpenFor: 10 * time.Second, NoJitter: true})
	before := []registry.Ticket{mustAdmit(t, b), mustAdmit(t, b), mustAdmit(t, b), mustAdmit(t, b)}
	if err := r.Isolate("svc"); err != nil {
		t.Fatal(err)
	}
	if !r.AnyUnavailable() {
		t.Fatal("AnyUnavailable = false while isolated")
	}
	// Outcomes while isolated: two failures would trip, successes would
	// close; neither shows.
	before[0].Done(failure)
	before[1].Done(failure)
	clk.Advance(time.Hour)
	st := b.Status()
	// Isolated until an operator resets it: no retry time is true.
	if st.State != open || !st.Isolated || st.RetryAfter != registry.UntilReset || st.Cause != registry.CauseIsolated {
		t.Fatalf("status while isolated = %+v", st)
	}
	if _, d := b.Admit(); d.Reason != registry.RefusedIsolated {
		t.Fatalf("Admit while isolated = %+v", d)
	}

	r.Reset("svc")
	wantState(t, b, closed, 0)
	if r.AnyUnavailable() {
		t.Fatal("AnyUnavailable after Reset")
	}
	// Tickets admitted before the reset are ignored: two failures would trip.
	before[2].Done(failure)
	before[3].Done(failure)
	wantState(t, b, closed, 0)
	if diff := cmp.Diff(registry.Counts{ShortCircuits: 1}, b.Counts()); diff != "" {
		t.Errorf("counts after reset (-want +got):\n%s", diff)
	}
	report(t, b, failure)
	report(t, b, failure)
	wantState(t, b, open, 10*time.Second)
}

// Reset while probes are out: their late outcomes are ignored, and the
// fresh breaker is not wedged by their slots.
func TestResetDuringHalfOpen(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true, ProbeLease: time.Second})
	trip(t, b)
	clk.Advance(time.Second)
	p := mustAdmit(t, b)
	b.Reset()
	if b.PendingProbes() != 0 {
		t.Fatal("pending probes after Reset")
	}
	clk.Advance(time.Hour) // the old lease is long gone
	wantState(t, b, closed, 0)
	if !p.Done(failure) {
		t.Fatal("first report of the old probe was refused")
	}
	wantState(t, b, closed, 0)
	trip(t, b)
	clk.Advance(time.Second)
	mustAdmit(t, b).Done(success)
	wantState(t, b, closed, 0)
}

func TestSnapshot(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true})
	for _, k := range []registry.Key{"c", "a", "b"} {
		mustGet(t, r, k)
	}
	clk.Advance(time.Second)
	trip(t, mustGet(t, r, "b"))
	if err := r.Isolate("c"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(4 * time.Second)
	var got []string
	for _, s := range r.Snapshot() {
		got = append(got, fmt.Sprintf("%s %v isolated=%v ra=%v since=%v trips=%d",
			s.Key, s.State, s.Isolated, s.RetryAfter, s.Since.Sub(t0), s.Counts.Trips))
	}
	want := []string{
		"a closed isolated=false ra=0s since=0s trips=0",
		"b open isolated=false ra=6s since=1s trips=1",
		"c open isolated=true ra=2562047h47m16.854775807s since=1s trips=0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
}

func TestPolicyResolution(t *testing.T) {
	own := registry.Policy{ConsecutiveFailures: 2, OpenFor: time.Minute}
	r := newRegistry(t, registrytest.NewFakeClock(t0), registry.Policy{ConsecutiveFailures: 9},
		registry.WithPolicy("own", own))
	if got, want := mustGet(t, r, "own").Policy(), own.WithDefaults(); got != want {
		t.Errorf("own policy = %+v, want %+v", got, want)
	}
	if got, want := mustGet(t, r, "other").Policy(), (registry.Policy{ConsecutiveFailures: 9}).WithDefaults(); got != want {
		t.Errorf("default policy = %+v, want %+v", got, want)
	}
	if got := r.PolicyFor("not-yet"); got.ConsecutiveFailures != 9 {
		t.Errorf("PolicyFor(not-yet) = %+v", got)
	}
}

func TestDefaults(t *testing.T) {
	got := registry.Policy{}.WithDefaults()
	want := registry.Policy{
		ConsecutiveFailures: 5, FailureRate: 0.5, MinCalls: 20, Window: 60 * time.Second,
		OpenFor: 30 * time.Second, OpenBackoff: 2, MaxOpenFor: 2 * time.Minute, OpenJitter: 0.1,
		HalfOpenProbes: 1, ProbeLease: 60 * time.Second, MaxRetryHint: time.Hour, RetryHintFailures: 3,
		SlowInFlightFactor: 10, SlowInFlightCalls: 3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("zero policy defaults (-want +got):\n%s", diff)
	}
	if got := (registry.Policy{NoJitter: true, OpenJitter: 0.3}).WithDefaults(); got.OpenJitter != 0 {
		t.Errorf("NoJitter kept OpenJitter %v", got.OpenJitter)
	}
	if got := (registry.Policy{OpenFor: 10 * time.Minute}).WithDefaults(); got.MaxOpenFor != 10*time.Minute {
		t.Errorf("MaxOpenFor = %v, want OpenFor when larger than the default", got.MaxOpenFor)
	}
	// The zero-policy registry works.
	r := newRegistry(t, registrytest.NewFakeClock(t0), registry.Policy{})
	b := mustGet(t, r, "svc")
	for range 4 {
		report(t, b, failure)
	}
	wantState(t, b, closed, 0)
	report(t, b, failure)
	if st := b.State(); st != open {
		t.Fatalf("zero policy: %v after 5 failures", st)
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		d         registry.Decision
		probe, is bool
		msg       string
	}{
		{registry.Decision{State: open, Reason: registry.RefusedOpen, RetryAfter: 1500 * time.Millisecond}, false, true,
			"registry: svc unavailable (circuit_open, state open); retry after 1.5s"},
		{registry.Decision{State: halfOpen, Reason: registry.RefusedProbeBusy, RetryAfter: time.Second}, true, true,
			"registry: svc unavailable (half_open_busy, state half_open); retry after 1s"},
		{registry.Decision{State: open, Reason: registry.RefusedIsolated, RetryAfter: time.Minute}, false, true,
			"registry: svc unavailable (isolated, state open); retry after 1m0s"},
	} {
		err := tt.d.Err("svc")
		if errors.Is(err, registry.ErrOpen) != tt.is || errors.Is(err, registry.ErrProbeLimit) != tt.probe {
			t.Errorf("%v: Is(ErrOpen)=%v Is(ErrProbeLimit)=%v", err, errors.Is(err, registry.ErrOpen), errors.Is(err, registry.ErrProbeLimit))
		}
		if err.Error() != tt.msg {
			t.Errorf("Error() = %q, want %q", err, tt.msg)
		}
		var oe *registry.OpenError
		if !errors.As(fmt.Errorf("wrapped: %w", err), &oe) || oe.Key != "svc" || oe.Reason != tt.d.Reason {
			t.Errorf("errors.As through a wrap: %+v", oe)
		}
	}
	if err := (registry.Decision{Allowed: true}).Err("svc"); err != nil {
		t.Errorf("admitted decision Err = %v", err)
	}
}

func TestStrings(t *testing.T) {
	got := []string{
		closed.String(), halfOpen.String(), open.String(), registry.State(9).String(),
		success.String(), failure.String(), excluded.String(), registry.Outcome(9).String(),
		registry.NotRefused.String(), registry.RefusedOpen.String(), registry.RefusedProbeBusy.String(),
		registry.RefusedIsolated.String(), registry.RefusedSaturated.String(), registry.Refusal(9).String(),
	}
	for c := registry.CauseTrip; c <= registry.CauseSlowCalls+1; c++ {
		got = append(got, c.String())
	}
	want := []string{
		"closed", "half_open", "open", "state(9)",
		"success", "failure", "excluded", "outcome(?)",
		"admitted", "circuit_open", "half_open_busy", "isolated", "saturated", "refusal(9)",
		"trip", "hold_expired", "probe_succeeded", "probe_failed", "lease_expired", "isolated", "reset", "retry_hint", "quota_exhausted", "slow_calls", "cause(11)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strings (-want +got):\n%s", diff)
	}
}
