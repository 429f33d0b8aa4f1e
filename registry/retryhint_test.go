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

// A retry hint floors an opening the hinted failure (or its streak) causes,
// or one that comes while the hint is current with no success since; a
// success reported after it means the server answered again, and drops the
// floor. Before, one `429 Retry-After: 3600` among successes held every trip
// of the next hour, whatever its cause, for up to an hour (cause trip).
func TestRetryHintFloorDroppedBySuccess(t *testing.T) {
	for name, pol := range map[string]registry.Policy{
		"contained": {OpenFor: 30 * time.Second, NoJitter: true},                            // tracked tickets (in-flight slowness on)
		"plain":     {OpenFor: 30 * time.Second, NoJitter: true, DisableSlowInFlight: true}, // untracked
	} {
		for _, via := range []string{"ticket", "reservation"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				clk, _, b := newBreaker(t, pol)
				do := func(o registry.Outcome, hint time.Duration) {
					t.Helper()
					if via == "ticket" {
						mustAdmit(t, b).DoneWithRetryAfter(o, hint)
						return
					}
					r := mustReserve(t, b)
					r.Report(o, hint)
				}
				do(failure, time.Hour) // one hinted failure: closed, a floor
				for range 100 {
					do(registry.Success, 0)
				}
				clk.Advance(50 * time.Minute)
				for range registry.DefaultConsecutiveFailures {
					do(failure, 0)
				}
				st := b.Status()
				if st.State != registry.StateOpen || st.Cause != registry.CauseTrip || st.RetryAfter != 30*time.Second {
					t.Fatalf("5 plain failures 50 min after a hinted failure and 100 successes: %v cause %v retry after %v, want open cause trip for OpenFor 30s",
						st.State, st.Cause, st.RetryAfter)
				}
			})
		}
	}
}

// A success that carries a hint itself, or an excluded outcome, keeps the
// floor; a success of a call admitted before the breaker's last state
// change does not count for the closed state and keeps it too.
func TestRetryHintFloorKeptWithoutAnAnswer(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true}
	clk, _, b := newBreaker(t, pol)
	mustAdmit(t, b).DoneWithRetryAfter(registry.Success, 40*time.Second) // a floor, no trip
	report(t, b, registry.Excluded)
	clk.Advance(time.Second)
	report(t, b, failure)
	wantState(t, b, open, 39*time.Second)

	clk.Advance(39 * time.Second)
	x := mustAdmit(t, b) // the probe
	x.Done(registry.Success)
	wantState(t, b, closed, 0)
	stale := mustAdmit(t, b) // admitted before the trip below
	report(t, b, failure)
	clk.Advance(10 * time.Second)
	mustAdmit(t, b).Done(registry.Success) // the probe: closed again
	b.ObserveRetryAfter(40 * time.Second)
	stale.Done(registry.Success) // not the closed state's: no answer since the hint
	clk.Advance(time.Second)
	report(t, b, failure)
	wantState(t, b, open, 39*time.Second)
}

// A floor recorded while a probe is out (the hinted failure of a call
// admitted before the trip) is dropped when the probe succeeds and the
// breaker closes: the next trip gets the policy's hold.
func TestRetryHintFloorDroppedOnClose(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, OpenBackoff: 1}
	clk, _, b := newBreaker(t, pol)
	late := mustAdmit(t, b)
	report(t, b, failure) // opens
	clk.Advance(10 * time.Second)
	p := mustAdmit(t, b)
	if !p.Probe() {
		t.Fatal("no probe after the hold")
	}
	late.DoneWithRetryAfter(failure, time.Hour) // stale: a floor only
	p.Done(registry.Success)
	wantState(t, b, closed, 0)
	clk.Advance(time.Minute)
	report(t, b, failure)
	if st := b.Status(); st.State != open || st.RetryAfter != 10*time.Second || st.Cause != registry.CauseTrip {
		t.Fatalf("trip a minute after the close: %v cause %v retry after %v, want open cause trip for 10s", st.State, st.Cause, st.RetryAfter)
	}
}
