package registry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// gateFunc adapts a function to registry.ProbeGate.
type gateFunc func(registry.Key) (bool, time.Duration)

func (f gateFunc) AllowProbe(k registry.Key) (bool, time.Duration) { return f(k) }

func TestProbeGateRefusesAndAdmits(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true})
	var asked []registry.Key
	allow := false
	r.SetProbeGate(gateFunc(func(k registry.Key) (bool, time.Duration) {
		asked = append(asked, k)
		return allow, 250 * time.Millisecond
	}))
	tk := mustAdmit(t, b) // closed: the gate is not consulted
	tk.Done(failure)
	if len(asked) != 0 {
		t.Fatalf("gate consulted on the closed path: %v", asked)
	}
	if _, d := b.Admit(); d.Allowed || d.Reason != registry.RefusedOpen || len(asked) != 0 {
		t.Fatalf("open: %+v, gate asked %v", d, asked)
	}
	clk.Advance(time.Second)
	_, d := b.Admit()
	if d.Allowed || d.Reason != registry.RefusedProbeBusy || d.RetryAfter != 250*time.Millisecond || d.State != halfOpen {
		t.Fatalf("gate refused: got %+v", d)
	}
	if b.PendingProbes() != 0 {
		t.Fatal("a refused probe took a slot")
	}
	allow = true
	tk, d = b.Admit()
	if !d.Allowed || !tk.Probe() {
		t.Fatalf("gate allowed: got %+v", d)
	}
	tk.Done(success)
	if b.State() != closed || len(asked) != 2 || asked[0] != "svc" {
		t.Fatalf("state %v, asked %v", b.State(), asked)
	}
	r.SetProbeGate(nil)
}

func TestAdoptOpenNeverShortensAndHasItsCause(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true})
	rec := record(t, r)
	b.AdoptOpen(3 * time.Second)
	if b.State() != open || b.RetryAfter() != 3*time.Second {
		t.Fatalf("adopted: %v %v", b.State(), b.RetryAfter())
	}
	b.AdoptOpen(time.Second) // shorter: ignored
	if b.RetryAfter() != 3*time.Second {
		t.Fatalf("a shorter adoption shortened the hold to %v", b.RetryAfter())
	}
	b.AdoptOpen(5 * time.Second) // longer: extends
	if b.RetryAfter() != 5*time.Second {
		t.Fatalf("a longer adoption: %v", b.RetryAfter())
	}
	b.AdoptOpen(0)
	clk.Advance(5 * time.Second)
	// The adopted hold is no retry-hint floor: the fleet may close it.
	if !b.AdoptClose() || b.State() != closed {
		t.Fatalf("AdoptClose after adopted hold: %v", b.State())
	}
	got := strings.Join(rec.briefs(t), " ")
	if want := "svc:closed>open:fleet_open svc:open>closed:fleet_close"; got != want {
		t.Fatalf("transitions = %s, want %s", got, want)
	}
	if registry.CauseFleetOpen.String() != "fleet_open" || registry.CauseFleetClose.String() != "fleet_close" {
		t.Fatal("cause names")
	}
}

func TestAdoptCloseRespectsIsolationAndHints(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true})
	if b.AdoptClose() {
		t.Fatal("closed a closed breaker")
	}
	b.Trip(time.Minute, registry.CauseRetryHint) // this replica's own server hint
	if b.AdoptClose() || b.State() != open {
		t.Fatal("a fleet close overrode this replica's retry hint")
	}
	clk.Advance(time.Minute)
	if !b.AdoptClose() {
		t.Fatal("hint over: close refused")
	}
	_ = r.Isolate("svc")
	if b.AdoptClose() || b.State() != open {
		t.Fatal("a fleet close ended an isolation")
	}
	b.AdoptOpen(time.Second)
	if st := b.Status(); !st.Isolated {
		t.Fatal("adoption ended an isolation")
	}
}

func TestAdoptCloseIgnoresOutcomesFromBefore(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true})
	mustAdmit(t, b).Done(failure)
	clk.Advance(time.Second)
	probe := mustAdmit(t, b)
	if !b.AdoptClose() {
		t.Fatal("not closed")
	}
	probe.Done(failure) // the old generation's probe
	if b.State() != closed {
		t.Fatalf("an outcome from before the fleet close reopened: %v", b.State())
	}
}

func TestKeys(t *testing.T) {
	_, r, _ := newBreaker(t, registry.Policy{})
	mustGet(t, r, "other")
	if k := r.Keys(); len(k) != 2 {
		t.Fatalf("Keys = %v", k)
	}
}

// TestTripDoesNotLeakItsExactHold: a threshold trip that happens right after
// a Trip's transition (here: a subscriber resets and trips the breaker as
// soon as it hears of the Trip) gets its policy hold, not the zero "exact"
// hold of the Trip still cleaning up. (Found by the fleet tests: a replica
// adopting a trip while an operator reset it opened with no hold at all.)
func TestTripDoesNotLeakItsExactHold(t *testing.T) {
	_, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Minute, NoJitter: true})
	holds := make(chan time.Duration, 1)
	r.Subscribe(func(tr registry.Transition) {
		switch tr.Cause {
		case registry.CauseRetryHint:
			b.Reset()
			if tk, d := b.Admit(); d.Allowed {
				tk.Done(failure)
			}
		case registry.CauseTrip:
			holds <- tr.RetryAfter
		}
	})
	for i := range 2000 {
		b.Trip(time.Second, registry.CauseRetryHint)
		if h := <-holds; h != time.Minute {
			t.Fatalf("round %d: the threshold trip after a Trip got a hold of %v, want 1m", i, h)
		}
		b.Reset()
	}
}

// TestTripFleetOpensOnlyAClosedBreaker: the fleet-rate trip opens a closed
// breaker for the policy's hold with cause fleet_rate, and leaves an open,
// half-open (its probe keeps its slot) or isolated breaker alone.
func TestTripFleetOpensOnlyAClosedBreaker(t *testing.T) {
	clk, r, b := newBreaker(t, registry.Policy{FailureRate: 0.5, MinCalls: 20, OpenFor: 10 * time.Second, NoJitter: true})
	rec := record(t, r)
	mustAdmit(t, b).Done(success)
	if !b.TripFleet() {
		t.Fatal("TripFleet did not open a closed breaker")
	}
	if b.State() != open || b.RetryAfter() != 10*time.Second || b.Status().Cause != registry.CauseFleetRate {
		t.Fatalf("after TripFleet: %v, retry after %v, cause %v", b.State(), b.RetryAfter(), b.Status().Cause)
	}
	if b.TripFleet() {
		t.Fatal("TripFleet reported opening an open breaker")
	}
	clk.Advance(10 * time.Second)
	probe := mustAdmit(t, b)
	if !probe.Probe() || b.TripFleet() || b.State() != halfOpen || b.PendingProbes() != 1 {
		t.Fatalf("half-open: TripFleet touched it (%v, %d probes)", b.State(), b.PendingProbes())
	}
	probe.Done(success)
	_ = r.Isolate("svc")
	if b.TripFleet() {
		t.Fatal("TripFleet opened an isolated breaker")
	}
	got := strings.Join(rec.briefs(t), " ")
	if want := "svc:closed>open:fleet_rate svc:open>half_open:hold_expired svc:half_open>closed:probe_succeeded svc:closed>open:isolated"; got != want {
		t.Fatalf("transitions = %s, want %s", got, want)
	}
	if registry.CauseFleetRate.String() != "fleet_rate" {
		t.Fatal("cause name")
	}
}

// TestAdoptOperatorActions: AdoptIsolate and AdoptReset act as Isolate and
// Reset with the fleet causes (so the fleet layer never echoes them); an
// isolation is adopted once, and a reset leaves a closed breaker (and its
// counts) alone.
func TestAdoptOperatorActions(t *testing.T) {
	_, r, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 5, NoJitter: true})
	rec := record(t, r)
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	if b.AdoptReset() {
		t.Error("AdoptReset reset a closed breaker")
	}
	if c := b.Counts(); c.Failures != 1 {
		t.Errorf("AdoptReset on a closed breaker cleared its counts: %+v", c)
	}
	if !b.AdoptIsolate() || b.AdoptIsolate() {
		t.Error("AdoptIsolate: want true once, then false")
	}
	if _, d := b.Admit(); d.Allowed || d.Reason != registry.RefusedIsolated || d.RetryAfter != registry.UntilReset {
		t.Errorf("after AdoptIsolate: %+v", d)
	}
	if !b.AdoptReset() {
		t.Error("AdoptReset did not end the isolation")
	}
	wantState(t, b, registry.StateClosed, 0)
	got := strings.Join(rec.briefs(t), " ")
	if want := "svc:closed>open:fleet_isolated svc:open>closed:fleet_reset"; got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
	if registry.CauseFleetIsolated.String() != "fleet_isolated" || registry.CauseFleetReset.String() != "fleet_reset" {
		t.Error("fleet cause names")
	}
}

// TestAllYieldsEveryBreakerWithoutAllocating: All walks the registry's
// table as it is (the fleet's outcome loop runs it every 50 ms).
func TestAllYieldsEveryBreakerWithoutAllocating(t *testing.T) {
	r := registry.MustNew()
	want := map[registry.Key]bool{"a": true, "b": true, "c": true}
	for k := range want {
		if _, err := r.Get(k); err != nil {
			t.Fatal(err)
		}
	}
	got := map[registry.Key]bool{}
	for k, b := range r.All() {
		if b.Key() != k {
			t.Fatalf("All yielded %q with the breaker of %q", k, b.Key())
		}
		got[k] = true
	}
	if len(got) != len(want) {
		t.Fatalf("All yielded %v, want %v", got, want)
	}
	if raceEnabled {
		return // allocation counts are the race detector's
	}
	n := 0
	if allocs := testing.AllocsPerRun(100, func() {
		for range r.All() {
			n++
		}
	}); allocs != 0 {
		t.Fatalf("All allocates %v times per walk", allocs)
	}
}
