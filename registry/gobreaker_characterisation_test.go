package registry_test

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Characterisation tests pinned to sony/gobreaker v2.4.0 (the version in
// go.mod). They document upstream behaviour that package registry works
// around (docs/gobreaker-notes.md §2 and §4.8), and fail loudly when an
// upgrade changes it: re-read the wrapper (breaker.go) before updating them.
//
// Each runs inside a testing/synctest bubble, whose virtual clock is the
// time.Now gobreaker reads.

var errCharFail = errors.New("dependency failed")

type twoStep = gobreaker.TwoStepCircuitBreaker[struct{}]

func newTwoStep(st gobreaker.Settings) *twoStep {
	if st.ReadyToTrip == nil {
		st.ReadyToTrip = func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 }
	}
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
}

// sleepVirtual advances the bubble's clock (a timer fires as soon as every
// goroutine of the bubble is blocked).
func sleepVirtual(d time.Duration) { <-time.After(d) }

// tripTwoStep reports one failure and waits until the breaker is half-open.
func tripTwoStep(t *testing.T, cb *twoStep, timeout time.Duration) {
	t.Helper()
	done, err := cb.Allow()
	if err != nil {
		t.Fatal(err)
	}
	done(errCharFail)
	if st := cb.State(); st != gobreaker.StateOpen {
		t.Fatalf("state %v after a failure, want open", st)
	}
	sleepVirtual(timeout + time.Millisecond)
	if st := cb.State(); st != gobreaker.StateHalfOpen {
		t.Fatalf("state %v after Timeout, want half-open", st)
	}
}

// §2a: a probe whose done is never called wedges a TwoStep breaker in
// half-open: over 40×Timeout every Allow is refused. (registry fixes this
// with probe leases: TestLostProbeExpiresAtLease.)
func TestGobreakerV240LostDoneWedgesHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 50 * time.Millisecond
		cb := newTwoStep(gobreaker.Settings{MaxRequests: 1, Timeout: timeout})
		tripTwoStep(t, cb, timeout)
		lost, err := cb.Allow()
		if err != nil {
			t.Fatal(err)
		}
		var admitted, tooMany int
		for elapsed := time.Duration(0); elapsed < 40*timeout; elapsed += time.Millisecond {
			sleepVirtual(time.Millisecond)
			switch done, err := cb.Allow(); {
			case err == nil:
				admitted++
				done(nil)
			case errors.Is(err, gobreaker.ErrTooManyRequests):
				tooMany++
			default:
				t.Fatalf("Allow: %v", err)
			}
		}
		if admitted != 0 || tooMany != 2000 || cb.State() != gobreaker.StateHalfOpen {
			t.Fatalf("over 40×Timeout: admitted=%d too-many=%d state=%v; want 0, 2000, half-open (wedged)",
				admitted, tooMany, cb.State())
		}
		// Only the lost done itself releases it, however late.
		lost(nil)
		if st := cb.State(); st != gobreaker.StateClosed {
			t.Fatalf("after the late done: %v, want closed", st)
		}
	})
}

// §2b2: done is not idempotent. One probe whose done(nil) is called twice
// closes a MaxRequests=2 breaker; an excluded done called twice frees two
// slots. (registry: TestDoubleReportOfProbe.)
func TestGobreakerV240DoneTwiceCountsTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		cb := newTwoStep(gobreaker.Settings{MaxRequests: 2, Timeout: timeout})
		tripTwoStep(t, cb, timeout)
		done, err := cb.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(nil)
		done(nil)
		if st := cb.State(); st != gobreaker.StateClosed {
			t.Fatalf("one probe reported twice: state %v, want closed (counted twice)", st)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		excl := errors.New("excluded")
		cb := newTwoStep(gobreaker.Settings{MaxRequests: 1, Timeout: timeout,
			IsExcluded: func(err error) bool { return err == excl }})
		tripTwoStep(t, cb, timeout)
		done, err := cb.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(excl)
		done(excl)
		admitted := 0
		for range 10 {
			if _, err := cb.Allow(); err == nil {
				admitted++
			}
		}
		if admitted != 2 {
			t.Fatalf("after a doubly excluded probe, %d of 10 admitted; want 2", admitted)
		}
	})
}

// §2b: a late done from an earlier generation is silently dropped: a stale
// failure cannot re-open, a stale success cannot close, and counts do not
// move. (registry relies on this for Reset and late results.)
func TestGobreakerV240LateDoneFromOldGenerationDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		cb := newTwoStep(gobreaker.Settings{MaxRequests: 1, Timeout: timeout})
		old1, _ := cb.Allow()
		old2, _ := cb.Allow()
		tripTwoStep(t, cb, timeout)
		probe, err := cb.Allow()
		if err != nil {
			t.Fatal(err)
		}
		before := cb.Counts()
		old1(errCharFail)
		old1(nil)
		if st, after := cb.State(), cb.Counts(); st != gobreaker.StateHalfOpen || after != before {
			t.Fatalf("old-generation done in half-open: state %v counts %+v → %+v", st, before, after)
		}
		probe(nil)
		if st := cb.State(); st != gobreaker.StateClosed {
			t.Fatalf("probe done: %v, want closed", st)
		}
		before = cb.Counts()
		old2(errCharFail) // two generations ago
		if st, after := cb.State(), cb.Counts(); st != gobreaker.StateClosed || after != before {
			t.Fatalf("done from two generations ago: state %v counts %+v → %+v", st, before, after)
		}
	})
}

// MaxRequests bounds the probes of a whole half-open episode, not those in
// flight: a success does not free a slot. (registry's RetryAfter and State
// count slots this way: TestRetryAfterSeveralProbes.)
func TestGobreakerV240HalfOpenSlotsPerEpisode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		cb := newTwoStep(gobreaker.Settings{MaxRequests: 3, Timeout: timeout})
		tripTwoStep(t, cb, timeout)
		var dones []func(error)
		for range 3 {
			d, err := cb.Allow()
			if err != nil {
				t.Fatal(err)
			}
			dones = append(dones, d)
		}
		dones[0](nil)
		if _, err := cb.Allow(); !errors.Is(err, gobreaker.ErrTooManyRequests) {
			t.Fatalf("after 1 of 3 probes succeeded, Allow = %v; want too many requests", err)
		}
		dones[1](nil)
		dones[2](nil)
		if st := cb.State(); st != gobreaker.StateClosed {
			t.Fatalf("after 3 successes: %v", st)
		}
	})
}

// The open→half-open move is lazy and needs time.Now to pass the expiry:
// at the expiry instant the breaker is still open, and OnStateChange says
// nothing until a call or a State read. registry sets Timeout to 1ns and
// keeps its own hold, so inside a synctest bubble virtual time must move
// between a trip and the probe.
func TestGobreakerV240OpenToHalfOpenIsLazy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []string
		cb := newTwoStep(gobreaker.Settings{Timeout: time.Nanosecond,
			OnStateChange: func(_ string, from, to gobreaker.State) { events = append(events, from.String()+">"+to.String()) }})
		done, _ := cb.Allow()
		done(errCharFail)
		// Virtual time has not moved: still open, even with a 1ns Timeout.
		if _, err := cb.Allow(); !errors.Is(err, gobreaker.ErrOpenState) {
			t.Fatalf("Allow at the trip instant = %v, want open", err)
		}
		sleepVirtual(time.Hour)
		if len(events) != 1 || events[0] != "closed>open" {
			t.Fatalf("events after an hour without calls: %v, want only closed>open", events)
		}
		if st := cb.State(); st != gobreaker.StateHalfOpen || len(events) != 2 {
			t.Fatalf("State() = %v, events %v", st, events)
		}
	})
}

// §2m: with a rolling window, the failure of a call that lasts longer than
// the window is thrown away: 100 calls failing 15s after they start never
// trip a 10s window. (registry: Policy.Window documentation.)
func TestGobreakerV240FailuresOlderThanWindowDropped(t *testing.T) {
	for _, tt := range []struct {
		callTime time.Duration
		tripped  bool
	}{
		{15 * time.Second, false},
		{5 * time.Second, true},
	} {
		synctest.Test(t, func(t *testing.T) {
			trips := 0
			cb := newTwoStep(gobreaker.Settings{
				Interval: 10 * time.Second, BucketPeriod: time.Second, Timeout: time.Hour,
				ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
				OnStateChange: func(_ string, _, to gobreaker.State) {
					if to == gobreaker.StateOpen {
						trips++
					}
				},
			})
			lag := int(tt.callTime / time.Second)
			pending := map[int]func(error){}
			for sec := 0; sec < 100+lag; sec++ {
				if d, ok := pending[sec-lag]; ok {
					d(errCharFail)
					delete(pending, sec-lag)
				}
				if sec < 100 {
					if d, err := cb.Allow(); err == nil {
						pending[sec] = d
					}
				}
				sleepVirtual(time.Second)
			}
			if (trips > 0) != tt.tripped {
				t.Fatalf("calls failing after %v: %d trips, want tripped=%v", tt.callTime, trips, tt.tripped)
			}
		})
	}
}

// A window close to MaxInt64 overflows gobreaker's bucket arithmetic and
// panics on the first Allow. registry caps Policy.Window (24h).
func TestGobreakerV240HugeIntervalPanics(t *testing.T) {
	cb := newTwoStep(gobreaker.Settings{Interval: math.MaxInt64, BucketPeriod: math.MaxInt64 / 10})
	defer func() {
		if recover() == nil {
			t.Fatal("Allow did not panic: gobreaker's bucket arithmetic changed; revisit registry's maxWindow")
		}
	}()
	_, _ = cb.Allow()
}
