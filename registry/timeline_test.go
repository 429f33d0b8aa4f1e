package registry_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

const s = time.Second

// Timeline tables for the state machine, in the style of x/time/rate: each
// row is a moment t0+at, an operation, and the state, retry_after and
// decision expected afterwards. Clock: registrytest.FakeClock, except where
// gobreaker's rolling window must age (synctest).

func TestTimeline(t *testing.T) {
	tests := []struct {
		name  string
		pol   registry.Policy
		steps []step
	}{
		{
			name: "trip on N consecutive failures",
			pol:  registry.Policy{ConsecutiveFailures: 3, DisableFailureRate: true, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: closed}},
				{0, call(failure), want{state: closed}},
				{1 * s, call(failure), want{state: open, retry: 10 * s}},
				{1 * s, refusedCall(), want{state: open, retry: 10 * s, reason: registry.RefusedOpen}},
				{5 * s, refusedCall(), want{state: open, retry: 6 * s, reason: registry.RefusedOpen}},
				{11*s - 1, refusedCall(), want{state: open, retry: 1, reason: registry.RefusedOpen}},
				// The hold is over: the state reads half_open before any call.
				{11 * s, check(), want{state: halfOpen}},
			},
		},
		{
			name: "a success resets the consecutive count",
			pol:  registry.Policy{ConsecutiveFailures: 3, DisableFailureRate: true, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, calls(2, failure), want{state: closed}},
				{1 * s, call(success), want{state: closed}},
				{2 * s, calls(2, failure), want{state: closed}},
				{3 * s, call(success), want{state: closed}},
				{4 * s, calls(2, failure), want{state: closed}},
				{5 * s, call(failure), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "excluded outcomes never trip and do not break a failure run",
			pol:  registry.Policy{ConsecutiveFailures: 2, MinCalls: 2, FailureRate: 0.5, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, calls(500, excluded), want{state: closed}},
				{1 * s, call(failure), want{state: closed}},
				{1 * s, calls(500, excluded), want{state: closed}},
				// Excluded is neither success nor failure: the run of
				// failures continues.
				{2 * s, call(failure), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "excluded outcomes are not in the failure-rate denominator",
			pol:  registry.Policy{ConsecutiveFailures: 100, MinCalls: 4, FailureRate: 0.5, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, calls(3, success), want{state: closed}},
				{0, calls(50, excluded), want{state: closed}},
				{0, call(failure), want{state: closed}},              // 1/4
				{0, call(failure), want{state: closed}},              // 2/5
				{0, call(failure), want{state: open, retry: 10 * s}}, // 3/6
			},
		},
		{
			name: "slow success counts as failure",
			pol:  registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true, SlowCall: 2 * s, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("fast"), want{state: closed}},
				{1 * s, done("fast", success), want{state: closed}},
				{1 * s, admit("slow1"), want{state: closed}},
				{3*s + 1, done("slow1", success), want{state: closed}}, // 2s+1ns: slow (1 in a row)
				{4 * s, admit("edge"), want{state: closed}},
				{6 * s, done("edge", success), want{state: closed}}, // exactly 2s: not slow, resets the run
				{6 * s, admit("slow2"), want{state: closed}},
				{9 * s, done("slow2", success), want{state: closed}}, // slow (1 in a row)
				{9 * s, admit("slow3"), want{state: closed}},
				{12 * s, done("slow3", success), want{state: open, retry: 10 * s}}, // slow (2 in a row)
			},
		},
		{
			name: "slow probe re-opens",
			pol:  registry.Policy{ConsecutiveFailures: 1, SlowCall: 2 * s, OpenFor: 10 * s, OpenBackoff: 1, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{10 * s, admit("probe"), want{state: halfOpen, retry: 60 * s}},
				{13 * s, done("probe", success), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "hold grows on re-trip, is capped, and resets after close",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, OpenBackoff: 2, MaxOpenFor: 35 * s, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{10 * s, call(failure), want{state: open, retry: 20 * s}}, // 10×2
				{30 * s, call(failure), want{state: open, retry: 35 * s}}, // 10×4 capped
				{65 * s, call(failure), want{state: open, retry: 35 * s}}, // stays capped
				{100 * s, call(success), want{state: closed}},
				{101 * s, call(failure), want{state: open, retry: 10 * s}}, // growth reset
				{111 * s, call(failure), want{state: open, retry: 20 * s}},
			},
		},
		{
			name: "backoff 1 keeps the hold constant",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, OpenBackoff: 1, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{10 * s, call(failure), want{state: open, retry: 10 * s}},
				{20 * s, call(failure), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "half_open busy refuses with the probe's remaining lease",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, ProbeLease: 5 * s, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{10 * s, admit("p"), want{state: halfOpen, retry: 5 * s}},
				{12 * s, refusedCall(), want{state: halfOpen, retry: 3 * s, reason: registry.RefusedProbeBusy}},
				{13 * s, done("p", excluded), want{state: halfOpen}}, // slot freed, undecided
				{13 * s, call(success), want{state: closed}},
			},
		},
		// Retry-hint floor.
		{
			name: "hint longer than the hold extends it, a shorter one never shortens it",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true, MaxRetryHint: time.Minute},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{1 * s, hint(25 * s), want{state: open, retry: 25 * s}},
				{2 * s, hint(5 * s), want{state: open, retry: 24 * s}},
				{3 * s, hint(2 * time.Hour), want{state: open, retry: time.Minute}}, // capped
				{4 * s, hint(0), want{state: open, retry: time.Minute - s}},
				{4 * s, hint(-time.Hour), want{state: open, retry: time.Minute - s}},
				{63 * s, check(), want{state: halfOpen}},
			},
		},
		{
			name: "hint shorter than the configured hold does not shorten it",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 3*s), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "no_trip_on_retry_hint: hint shorter than the configured hold does not shorten it",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true, NoTripOnRetryHint: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 3*s), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "trip_on_retry_hint: a failure with a hint opens at once for the hint, before the threshold",
			pol:  registry.Policy{ConsecutiveFailures: 5, OpenFor: 10 * s, NoJitter: true, TripOnRetryHint: ptr(true)},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 3*s), want{state: open, retry: 3 * s}},
			},
		},
		{
			name: "a failure with a hint is one ordinary failure, a floor once the breaker opens",
			pol:  registry.Policy{ConsecutiveFailures: 5, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 30*s), want{state: closed}},
				{0, call(failure), want{state: closed}},
				{0, call(failure), want{state: closed}},
				{0, call(failure), want{state: closed}},
				{1 * s, call(failure), want{state: open, retry: 29 * s}}, // fifth in a row: the hint floors the 10s hold
			},
		},
		{
			name: "a success after a hint drops its floor: the server answered again",
			pol:  registry.Policy{ConsecutiveFailures: 5, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 30*s), want{state: closed}},
				{0, call(success), want{state: closed}},
				{0, calls(4, failure), want{state: closed}},
				{1 * s, call(failure), want{state: open, retry: 10 * s}}, // the policy's hold, 29s before
			},
		},
		{
			name: "no_trip_on_retry_hint: a failure with a hint is one ordinary failure",
			pol:  registry.Policy{ConsecutiveFailures: 5, OpenFor: 10 * s, NoJitter: true, NoTripOnRetryHint: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 3*s), want{state: closed}},
			},
		},
		{
			name: "hint reported with the tripping failure sets the hold",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", failure, 40*s), want{state: open, retry: 40 * s}},
			},
		},
		{
			name: "hint observed while closed applies to the next trip if still in the future",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, hint(30 * s), want{state: closed}},
				{5 * s, call(failure), want{state: open, retry: 25 * s}}, // until t0+30s, not t0+15s
			},
		},
		{
			name: "hint observed while closed that has passed is ignored",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, hint(3 * s), want{state: closed}},
				{5 * s, call(failure), want{state: open, retry: 10 * s}},
			},
		},
		{
			name: "hint observed while half_open floors the re-trip",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, OpenBackoff: 1, NoJitter: true},
			steps: []step{
				{0, call(failure), want{state: open, retry: 10 * s}},
				{10 * s, admit("p"), want{state: halfOpen, retry: 60 * s}},
				{11 * s, doneHint("p", failure, 50*s), want{state: open, retry: 50 * s}},
			},
		},
		{
			name: "a hint on a success while closed does not open",
			pol:  registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, NoJitter: true},
			steps: []step{
				{0, admit("a"), want{state: closed}},
				{0, doneHint("a", success, 40*s), want{state: closed}},
				{1 * s, call(failure), want{state: open, retry: 39 * s}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk, _, b := newBreaker(t, tt.pol)
			runTimeline(t, fakeTime{clk}, b, tt.steps)
		})
	}
}

// TestTimelineRollingWindow runs inside a synctest bubble, whose virtual
// clock drives both the registry (system clock) and gobreaker's rolling
// window buckets.
func TestTimelineRollingWindow(t *testing.T) {
	pol := registry.Policy{
		ConsecutiveFailures: 1000, // only the rate trips
		FailureRate:         0.5,
		MinCalls:            10,
		Window:              10 * s, // ten 1s buckets
		OpenFor:             30 * s,
		NoJitter:            true,
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "trip on failure rate with enough calls",
			steps: []step{
				{0, calls(5, success), want{state: closed}},
				{1 * s, calls(4, failure), want{state: closed}},          // 4/9: too few calls
				{9 * s, call(failure), want{state: open, retry: 30 * s}}, // 5/10 ≥ 0.5
			},
		},
		{
			name: "below the rate does not trip",
			steps: []step{
				{0, calls(6, success), want{state: closed}},
				{1 * s, calls(4, failure), want{state: closed}},          // 4/10
				{2 * s, call(failure), want{state: closed}},              // 5/11
				{3 * s, call(failure), want{state: open, retry: 30 * s}}, // 6/12
			},
		},
		{
			name: "outcomes older than the window age out",
			steps: []step{
				{0, calls(5, success), want{state: closed}},
				{0, calls(4, failure), want{state: closed}},
				// Ten seconds on, every bucket of t0 has aged out: this is
				// 1 call, not 10.
				{10 * s, call(failure), want{state: closed}},
				{11 * s, calls(8, failure), want{state: closed}},          // 9 calls
				{12 * s, call(failure), want{state: open, retry: 30 * s}}, // 10/10
			},
		},
		{
			name: "a partial window keeps its newer buckets",
			steps: []step{
				{0, calls(9, success), want{state: closed}},
				{5 * s, calls(4, failure), want{state: closed}}, // 4/13
				// t0's bucket has aged out at t0+10s; t0+5s's has not.
				{10 * s, calls(5, failure), want{state: closed}},          // 9/9: too few calls
				{14 * s, call(failure), want{state: open, retry: 30 * s}}, // 10/10
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRegistry(t, registry.SystemClock(), pol)
				b := mustGet(t, r, "svc")
				runTimeline(t, virtualTime{time.Now()}, b, tt.steps)
			})
		})
	}
}

// TestJitter pins the jittered hold for injected random values: the hold is
// d·(1 + J·u), within [d, d(1+J)], and never shorter than d.
func TestJitter(t *testing.T) {
	const d = 10 * s
	tests := []struct {
		u    float64
		want time.Duration
	}{
		{0, d},
		{0.5, d + d/10}, // J=0.2: +1s
		{0.999, d + time.Duration(0.999*0.2*float64(d))}, // +1.998s
		// A misbehaving source must never shorten the hold or pass d(1+J).
		{-0.5, d},
		{1.5, d + 2*s},
	}
	for _, tt := range tests {
		for _, reopens := range []int{0, 1} {
			clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: d, OpenBackoff: 2, OpenJitter: 0.2},
				registry.WithRand(func() float64 { return tt.u }))
			trip(t, b)
			base, want := d, tt.want
			if reopens == 1 {
				clk.Advance(b.RetryAfter())
				report(t, b, failure)
				base, want = 2*d, 2*tt.want
			}
			got := b.RetryAfter()
			if got != want {
				t.Errorf("u=%v reopens=%d: hold = %v, want %v", tt.u, reopens, got, want)
			}
			if got < base || got > base+base/5 {
				t.Errorf("u=%v reopens=%d: hold %v outside [%v, %v]", tt.u, reopens, got, base, base+base/5)
			}
		}
	}
}

// TestJitterDefaultSource checks the default random source: holds stay in
// [d, d(1+J)) and are spread (not all equal).
func TestJitterDefaultSource(t *testing.T) {
	const d = 10 * s
	seen := map[time.Duration]bool{}
	for range 200 {
		clk := registrytest.NewFakeClock(t0)
		r := newRegistry(t, clk, registry.Policy{ConsecutiveFailures: 1, OpenFor: d}) // default jitter 0.1
		b := mustGet(t, r, "svc")
		trip(t, b)
		got := b.RetryAfter()
		if got < d || got >= d+d/10 {
			t.Fatalf("hold %v outside [%v, %v)", got, d, d+d/10)
		}
		seen[got] = true
	}
	if len(seen) < 100 {
		t.Errorf("200 trips gave only %d distinct holds", len(seen))
	}
}

// TestNoJitter checks NoJitter wins over OpenJitter.
func TestNoJitter(t *testing.T) {
	_, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * s, OpenJitter: 0.5, NoJitter: true},
		registry.WithRand(func() float64 { return 0.9 }))
	trip(t, b)
	if got := b.RetryAfter(); got != 10*s {
		t.Fatalf("hold = %v, want 10s", got)
	}
}

// TestJitterNeverPassesTheCap: at MaxOpenFor the jitter is taken off the
// cap, so "a probe at least every MaxOpenFor" holds (incident recovery
// depends on it) while replicas still spread out.
func TestJitterNeverPassesTheCap(t *testing.T) {
	for _, u := range []float64{0.001, 0.5, 0.999} {
		clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 30 * s, MaxOpenFor: 60 * s, OpenJitter: 0.1},
			registry.WithRand(func() float64 { return u }))
		trip(t, b)
		if got := b.RetryAfter(); got < 30*s || got > 33*s {
			t.Fatalf("u=%v: first hold %v, want 30s + up to 10%%", u, got)
		}
		for i := range 4 { // 60s (capped) from the first re-trip on
			clk.Advance(b.RetryAfter())
			tk, d := b.Admit()
			if !d.Allowed {
				t.Fatalf("u=%v re-trip %d: probe refused: %+v", u, i, d)
			}
			tk.Done(failure)
			if got := b.RetryAfter(); got > 60*s || got < 54*s {
				t.Fatalf("u=%v re-trip %d: hold %v, want in [54s, 60s]", u, i, got)
			}
		}
	}
}

// Holds near the largest Duration saturate instead of overflowing into the
// past: growth capped at MaxOpenFor, jitter inside the cap.
func TestHoldSaturates(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		pol  registry.Policy
		u    float64
	}{
		{"jitter at the top", registry.Policy{ConsecutiveFailures: 1, OpenFor: huge / 2, MaxOpenFor: huge, OpenJitter: 1}, 0.999},
		{"growth to MaxInt64", registry.Policy{ConsecutiveFailures: 1, OpenFor: huge / 4, MaxOpenFor: huge, OpenBackoff: 100, NoJitter: true}, 0},
		{"growth and jitter", registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Hour, MaxOpenFor: huge, OpenBackoff: 100, OpenJitter: 0.5}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk, _, b := newBreaker(t, tt.pol, registry.WithRand(func() float64 { return tt.u }))
			trip(t, b)
			prev := b.RetryAfter()
			if prev < tt.pol.OpenFor {
				t.Fatalf("first hold %v < open_for %v", prev, tt.pol.OpenFor)
			}
			for i := range 12 {
				clk.Set(t0) // keep the clock far from the end of time
				if _, d := b.Admit(); d.Allowed {
					t.Fatalf("re-trip %d: admitted during a hold of %v", i, prev)
				}
				// Force the hold to expire by resetting the clock base: the
				// breaker must still be open, never wrapped into the past.
				if st := b.State(); st != open {
					t.Fatalf("re-trip %d: state %v with hold %v", i, st, prev)
				}
				clk.Set(t0.Add(prev))
				tk, d := b.Admit()
				if !d.Allowed {
					t.Fatalf("re-trip %d: probe refused: %+v", i, d)
				}
				clk.Set(t0)
				tk.Done(failure)
				got := b.RetryAfter()
				if got <= 0 || got < tt.pol.OpenFor || got > tt.pol.MaxOpenFor {
					t.Fatalf("re-trip %d: hold %v outside [open_for %v, max_open_for %v]", i, got, tt.pol.OpenFor, tt.pol.MaxOpenFor)
				}
				prev = got
			}
		})
	}
}

// B7: a thousand excluded outcomes (caller cancellations) keep the breaker
// closed and counted apart; then ordinary failures trip it.
func TestExcludedThenFailures(t *testing.T) {
	_, _, b := newBreaker(t, registry.Policy{}) // defaults: 5 in a row, or 50% of ≥ 20
	for range 1000 {
		report(t, b, excluded)
	}
	wantState(t, b, closed, 0)
	if c := b.Counts(); c.Exclusions != 1000 || c.Failures != 0 || c.Successes != 0 {
		t.Fatalf("counts = %+v", c)
	}
	for range 4 {
		report(t, b, failure)
	}
	wantState(t, b, closed, 0)
	report(t, b, failure)
	if st := b.State(); st != open {
		t.Fatalf("state %v after 5 failures, want open", st)
	}
}
