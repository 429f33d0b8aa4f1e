package registry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

func ptr[T any](v T) *T { return &v }

// By default (TripOnRetryHint nil), as with either spelling of false, one
// failure with a hint among successes leaves the breaker closed, a floor for
// a later hold; RetryHintFailures (3 by default) failures in a row, the last
// with a hint, open it for at least the hint, and never before that call.
func TestRetryHintStreakOpensForTheHint(t *testing.T) {
	for name, pol := range map[string]registry.Policy{
		"default":               {},
		"trip_on_retry_hint":    {TripOnRetryHint: ptr(false)},
		"no_trip_on_retry_hint": {NoTripOnRetryHint: true},
	} {
		t.Run(name, func(t *testing.T) {
			pol.ConsecutiveFailures, pol.DisableFailureRate, pol.OpenFor, pol.NoJitter = 10, true, 5*time.Second, true
			if pol.TripsOnRetryHint() {
				t.Fatal("TripsOnRetryHint")
			}
			clk, _, b := newBreaker(t, pol)
			for i := range 20 {
				tk := mustAdmit(t, b)
				if i == 5 {
					tk.DoneWithRetryAfter(failure, 40*time.Second)
					continue
				}
				tk.Done(registry.Success)
			}
			if st := b.Status(); st.State != registry.StateClosed || st.Counts.Trips != 0 {
				t.Fatalf("one hinted failure among successes: %+v, want closed", st)
			}
			clk.Advance(time.Second)
			for i := 1; i <= registry.DefaultRetryHintFailures; i++ {
				mustAdmit(t, b).DoneWithRetryAfter(failure, 40*time.Second)
				if st := b.State(); (st == registry.StateOpen) != (i == registry.DefaultRetryHintFailures) {
					t.Fatalf("after %d hinted failures in a row: %v", i, st)
				}
			}
			st := b.Status()
			if st.Cause != registry.CauseRetryHint || st.RetryAfter != 40*time.Second {
				t.Fatalf("opened by the streak: %+v, want cause retry_hint for the 40s hint (OpenFor is 5s)", st)
			}
			clk.Advance(39 * time.Second)
			if _, d := b.Admit(); d.Allowed {
				t.Fatal("admitted within the hint")
			}
			clk.Advance(time.Second)
			if tk, d := b.Admit(); !d.Allowed || !tk.Probe() {
				t.Fatalf("after the hint: %+v, want a probe", d)
			}
		})
	}
}

// A failure in a streak without a hint does not open by itself (the
// consecutive threshold does), and a success breaks the streak.
func TestRetryHintStreakNeedsTheHintLast(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 10, DisableFailureRate: true, NoJitter: true,
		TripOnRetryHint: ptr(false), RetryHintFailures: 2}
	_, _, b := newBreaker(t, pol)
	mustAdmit(t, b).Done(failure)
	mustAdmit(t, b).Done(failure)
	mustAdmit(t, b).Done(registry.Success)
	mustAdmit(t, b).DoneWithRetryAfter(failure, time.Minute)
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("a success broke the streak: %v", st)
	}
	mustAdmit(t, b).Done(failure)
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("a streak whose last failure has no hint: %v", st)
	}
	mustAdmit(t, b).DoneWithRetryAfter(failure, time.Minute)
	if st := b.Status(); st.State != registry.StateOpen || st.Cause != registry.CauseRetryHint {
		t.Fatalf("third failure in a row, with a hint: %+v", st)
	}
}

func TestTripOnRetryHintDefaultsAndValidation(t *testing.T) {
	if (registry.Policy{}).TripsOnRetryHint() || (registry.Policy{NoTripOnRetryHint: true}).TripsOnRetryHint() ||
		(registry.Policy{TripOnRetryHint: ptr(false)}).TripsOnRetryHint() || !(registry.Policy{TripOnRetryHint: ptr(true)}).TripsOnRetryHint() ||
		(registry.Policy{}).WithDefaults().TripsOnRetryHint() {
		t.Fatal("TripsOnRetryHint: want false by default and with either spelling of false, true only with trip_on_retry_hint: true")
	}
	err := registry.Policy{NoTripOnRetryHint: true, TripOnRetryHint: ptr(true), RetryHintFailures: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "no_trip_on_retry_hint: contradicts") || !strings.Contains(err.Error(), "retry_hint_failures: must be in [0, 1000]") {
		t.Fatalf("Validate = %v, want both problems", err)
	}
	// The breaker keeps its own copy of the switch.
	sw := true
	_, _, b := newBreaker(t, registry.Policy{TripOnRetryHint: &sw})
	sw = false
	mustAdmit(t, b).DoneWithRetryAfter(failure, time.Minute)
	if b.State() != registry.StateOpen {
		t.Fatal("the caller's bool changed the breaker's policy")
	}
}

func TestCheckCallTimeout(t *testing.T) {
	p := registry.Policy{Window: 5 * time.Minute, ProbeLease: 5 * time.Minute}
	errs := p.CheckCallTimeout("endpoints[0].timeout", 10*time.Minute)
	if len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), "endpoints[0].timeout: 10m0s must be below the breaker's window (5m0s)") ||
		!strings.Contains(errs[1].Error(), "probe_lease (5m0s)") {
		t.Fatalf("CheckCallTimeout = %v", errs)
	}
	if errs := p.CheckCallTimeout("x", 4*time.Minute); errs != nil {
		t.Fatalf("4m under 5m: %v", errs)
	}
	if errs := (registry.Policy{}).CheckCallTimeout("x", time.Minute); len(errs) != 2 {
		t.Fatalf("1m against the 60s defaults: %v, want window and probe_lease", errs)
	}
}
