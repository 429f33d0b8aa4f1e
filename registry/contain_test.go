package registry_test

import (
	"container/heap"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// hangPolicy judges calls outstanding for 1s as slow; 3 trip. Nothing else
// trips within the tests' volume.
var hangPolicy = registry.Policy{
	SlowInFlight: time.Second, SlowInFlightCalls: 3, ConsecutiveFailures: 1000,
	DisableFailureRate: true, NoJitter: true, OpenBackoff: 1,
}

func mustReserve(t testing.TB, b *registry.Breaker) registry.Reservation {
	t.Helper()
	r, d := b.Reserve()
	if !d.Allowed {
		t.Fatalf("Reserve refused: %+v", d)
	}
	return r
}

// A dependency that hangs: a call every 100ms, none returns. The breaker
// opens with cause slow_calls once three calls have been outstanding for the
// threshold, long before any of them returns; when the hung calls finally
// return, the three judged ones are excluded and nothing counts twice.
func TestSlowInFlightTripsBeforeCallsReturn(t *testing.T) {
	clk, r, b := newBreaker(t, hangPolicy)
	rec := record(t, r)
	var hung []registry.Reservation
	var trippedAt time.Duration
	for at := time.Duration(0); at < 3*time.Second; at += 100 * time.Millisecond {
		clk.Set(t0.Add(at))
		res, d := b.Reserve()
		if !d.Allowed {
			trippedAt = at
			break
		}
		hung = append(hung, res)
	}
	// The third call started at 200ms and is slow from 1.2s; the detector
	// sees it at the next admission.
	if trippedAt == 0 || trippedAt > 1300*time.Millisecond {
		t.Fatalf("tripped at %v, want ≤ 1.3s", trippedAt)
	}
	if got := rec.briefs(t); len(got) != 1 || !strings.Contains(got[0], "slow_calls") {
		t.Fatalf("transitions = %v, want one trip with cause slow_calls", got)
	}
	cc := b.ContainCounts()
	if cc.SlowVerdicts != 3 || cc.InFlight != len(hung) {
		t.Fatalf("contain counts = %+v, want 3 verdicts and %d in flight", cc, len(hung))
	}
	// The hung calls return (at their 5s timeout): failures and a success.
	clk.Set(t0.Add(5 * time.Second))
	for i := range hung {
		o := failure
		if i == 1 {
			o = success
		}
		hung[i].Report(o, 0)
	}
	cc = b.ContainCounts()
	if cc.LateOutcomes != 3 || cc.InFlight != 0 {
		t.Fatalf("after the late returns: %+v, want 3 late outcomes, 0 in flight", cc)
	}
	if c := b.Counts(); c.Trips != 1 || c.Failures != 0 || c.Successes != 0 {
		t.Fatalf("late returns counted: %+v", c)
	}
	if got := rec.briefs(t); len(got) != 1 {
		t.Fatalf("late returns moved the breaker: %v", got)
	}
	// Recovery: the hold (30s) expires, the probe succeeds, the breaker
	// closes and the judged calls are not judged again.
	clk.Set(t0.Add(40 * time.Second))
	p := mustReserve(t, b)
	p.Report(success, 0)
	wantState(t, b, closed, 0)
}

// The slowness verdict is taken on a state read too: no admission needed.
func TestSlowInFlightOnStateRead(t *testing.T) {
	clk, _, b := newBreaker(t, hangPolicy)
	var hung []registry.Reservation
	for range 3 {
		hung = append(hung, mustReserve(t, b))
		clk.Advance(100 * time.Millisecond)
	}
	if st := b.State(); st != closed {
		t.Fatalf("state = %v at 300ms", st)
	}
	clk.Advance(time.Second)
	b.State() // closes the last epoch
	clk.Advance(time.Second)
	if st := b.State(); st != open {
		t.Fatalf("state = %v with three calls outstanding 2s, want open", st)
	}
	for _, h := range hung {
		h.Report(excluded, 0)
	}
}

// Without a fixed threshold, the detector arms itself from healthy
// latency: 10 × 20ms is below the 500ms floor, so the threshold is 500ms.
// SlowInFlightFactor applies while the tail is being learned (the first 64
// measured calls); then the threshold is twice the measured p99.
func TestSlowInFlightDerivedThreshold(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{NoJitter: true})
	if thr := b.ContainCounts().SlowThreshold; thr != 0 {
		t.Fatalf("threshold before any sample = %v", thr)
	}
	for range 64 {
		res := mustReserve(t, b)
		clk.Advance(20 * time.Millisecond)
		res.Report(success, 0)
	}
	if thr := b.ContainCounts().SlowThreshold; thr != registry.MinSlowInFlight {
		t.Fatalf("threshold = %v, want the %v floor", thr, registry.MinSlowInFlight)
	}
	clk, _, slow := newBreaker(t, registry.Policy{SlowInFlightFactor: 4})
	for i := range 64 {
		res := mustReserve(t, slow)
		clk.Advance(2 * time.Second)
		res.Report(success, 0)
		if i == 31 {
			if thr := slow.ContainCounts().SlowThreshold; thr < 7*time.Second || thr > 9*time.Second {
				t.Fatalf("threshold while learning = %v, want about 4 × 2s", thr)
			}
		}
	}
	if thr := slow.ContainCounts().SlowThreshold; thr < 4*time.Second || thr > 5*time.Second {
		t.Fatalf("threshold once the tail is known = %v, want about 2 × the 2s p99", thr)
	}
}

// steadyBreaker returns a default breaker that has seen 100 healthy calls
// of 200ms, one every 100ms (the tail is learned), and the time reached.
func steadyBreaker(t *testing.T) (*registrytest.FakeClock, *recorder, *registry.Breaker, time.Duration) {
	t.Helper()
	clk, r, b := newBreaker(t, registry.Policy{NoJitter: true, CallTimeout: 5 * time.Second})
	rec := record(t, r)
	set := func(d time.Duration) { clk.Set(t0.Add(d)) }
	at := replaySteady(t, b, set, 0, 100, func(int) time.Duration { return 200 * time.Millisecond })
	if thr := b.ContainCounts().SlowThreshold; thr != registry.MinSlowInFlight {
		t.Fatalf("threshold of a steady 200ms dependency = %v, want %v (2 × p99 is below the floor)", thr, registry.MinSlowInFlight)
	}
	return clk, rec, b, at
}

// replaySteady makes n calls, one every 100ms from from, call i returning
// after latency(i) (a latency ≤ 0: it never returns; its reservation is
// dropped). Calls still out at the end are reported when they return. It
// returns the time reached: the next call's slot, or the last return if
// later.
func replaySteady(t *testing.T, b *registry.Breaker, set func(time.Duration), from time.Duration, n int, latency func(int) time.Duration) time.Duration {
	t.Helper()
	var pending pendingCalls
	at := from
	for i := range n {
		for len(pending) > 0 && pending[0].at <= at {
			c := heap.Pop(&pending).(pendingCall)
			set(c.at)
			c.res.Report(success, 0)
		}
		set(at)
		res, d := b.Reserve()
		if !d.Allowed {
			t.Fatalf("call %d at %v refused: %+v", i, at, d)
		}
		if l := latency(i); l > 0 {
			heap.Push(&pending, pendingCall{at: at + l, res: res})
		}
		at += 100 * time.Millisecond
	}
	for len(pending) > 0 {
		c := heap.Pop(&pending).(pendingCall)
		set(c.at)
		c.res.Report(success, 0)
		at = max(at, c.at)
	}
	return at
}

// A steady 200ms dependency hangs: completions stop while a call still
// starts every 100ms. The stall rule trips it once its oldest hung call is
// past the 500ms threshold and every call after it is past the healthy p99
// (about 215ms) too — after 5 calls, not the 20 that 3 calls each past
// 10 × 200ms needed (the bulkhead of the seed's incident stopped that
// outage, not the detector). The judged calls are counted once.
func TestStallTripsASteadySlowDependency(t *testing.T) {
	clk, rec, b, at := steadyBreaker(t)
	var hung []registry.Reservation
	start := at
	for ; at < start+5*time.Second; at += 100 * time.Millisecond {
		clk.Set(t0.Add(at))
		res, d := b.Reserve()
		if !d.Allowed {
			break
		}
		hung = append(hung, res)
	}
	if len(hung) > 6 {
		t.Fatalf("%d calls admitted into the hang before the trip, want ≤ 6", len(hung))
	}
	if got := rec.briefs(t); len(got) != 1 || !strings.Contains(got[0], "slow_calls") {
		t.Fatalf("transitions %v, want one slow_calls trip", got)
	}
	cc := b.ContainCounts()
	if cc.Stalls != 1 || cc.SlowVerdicts < 3 || cc.SlowVerdicts > uint64(len(hung)) {
		t.Fatalf("contain counts %+v with %d hung calls: want one stall, 3…%d verdicts", cc, len(hung), len(hung))
	}
	t.Logf("tripped %v into the hang, %d calls admitted, %d judged", at-start, len(hung), cc.SlowVerdicts)
	clk.Set(t0.Add(at + 5*time.Second))
	for _, h := range hung {
		h.Report(failure, 0)
	}
	if c := b.Counts(); c.Trips != 1 || c.Failures != 0 {
		t.Fatalf("the hung calls' late failures counted: %+v", c)
	}
}

// A stall needs completions to stop. One call of a steady 200ms dependency
// outstanding for seconds among calls that return, then two in a row, then
// three with two returning calls between each (fewer than half of their
// calls: the rule for slow calls past the threshold, which judges a
// partial hang of half the calls or more, leaves it alone too): none is a
// hang.
func TestStallNeedsCompletionsToStop(t *testing.T) {
	clk, rec, b, at := steadyBreaker(t)
	set := func(d time.Duration) { clk.Set(t0.Add(d)) }
	patterns := map[string]func(int) time.Duration{
		"one slow call": func(i int) time.Duration {
			if i == 3 {
				return 4 * time.Second
			}
			return 200 * time.Millisecond
		},
		"two in a row": func(i int) time.Duration {
			if i == 3 || i == 4 {
				return 4 * time.Second
			}
			return 200 * time.Millisecond
		},
		"three, interleaved": func(i int) time.Duration {
			if i == 3 || i == 6 || i == 9 {
				return 4 * time.Second
			}
			return 200 * time.Millisecond
		},
	}
	for _, name := range []string{"one slow call", "two in a row", "three, interleaved"} {
		at = replaySteady(t, b, set, at, 80, patterns[name])
		if got := rec.briefs(t); len(got) != 0 {
			t.Fatalf("%s: transitions %v, want none", name, got)
		}
	}
}

// The bulkhead refuses the 21st concurrent call with RefusedSaturated,
// leaves the breaker closed and counts nothing as a failure; a freed slot
// admits again.
func TestBulkheadRefusesOverCap(t *testing.T) {
	_, r, b := newBreaker(t, registry.Policy{MaxConcurrent: 20, DisableSlowInFlight: true})
	rec := record(t, r)
	var in []registry.Reservation
	for range 20 {
		in = append(in, mustReserve(t, b))
	}
	for range 5 {
		_, d := b.Reserve()
		if d.Allowed || d.Reason != registry.RefusedSaturated || d.State != closed || d.RetryAfter != registry.SaturatedRetryAfter {
			t.Fatalf("21st call: %+v", d)
		}
		if err := d.Err("svc"); !errors.Is(err, registry.ErrSaturated) || !errors.Is(err, registry.ErrOpen) {
			t.Fatalf("Err = %v", err)
		}
	}
	if _, d := b.Admit(); d.Reason != registry.RefusedSaturated {
		t.Fatalf("Admit over the cap: %+v", d)
	}
	in[0].Report(success, 0)
	in[0] = mustReserve(t, b)
	for _, res := range in {
		res.Report(success, 0)
	}
	cc, c := b.ContainCounts(), b.Counts()
	if cc.Saturated != 6 || cc.PeakInFlight != 20 || cc.InFlight != 0 {
		t.Fatalf("contain counts = %+v", cc)
	}
	if c.Failures != 0 || c.Trips != 0 || b.State() != closed || len(rec.briefs(t)) != 0 {
		t.Fatalf("saturation counted against the dependency: %+v", c)
	}
}

// Half-open probes are exempt from the bulkhead: calls hung from the closed
// state cannot starve the probe that would close the breaker.
func TestBulkheadProbeExempt(t *testing.T) {
	clk, _, b := newBreaker(t, registry.Policy{MaxConcurrent: 2, DisableSlowInFlight: true, NoJitter: true})
	h1, h2 := mustReserve(t, b), mustReserve(t, b)
	b.Trip(10*time.Second, registry.CauseRetryHint)
	clk.Advance(11 * time.Second)
	p := mustReserve(t, b)
	p.Report(success, 0)
	wantState(t, b, closed, 0)
	h1.Report(excluded, 0)
	h2.Report(excluded, 0)
	if cc := b.ContainCounts(); cc.InFlight != 0 {
		t.Fatalf("in flight = %d", cc.InFlight)
	}
}

// A call over the cap waits up to QueueWait for a slot.
func TestBulkheadQueueWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{
			MaxConcurrent: 1, QueueWait: 100 * time.Millisecond, DisableSlowInFlight: true,
		}))
		b := mustGet(t, r, "svc")
		first := mustReserve(t, b)
		go func() {
			time.Sleep(50 * time.Millisecond)
			first.Report(success, 0)
		}()
		start := time.Now()
		second := mustReserve(t, b) // waits for the first to finish
		if w := time.Since(start); w != 50*time.Millisecond {
			t.Fatalf("waited %v, want 50ms", w)
		}
		start = time.Now()
		if _, d := b.Reserve(); d.Reason != registry.RefusedSaturated {
			t.Fatalf("third call: %+v", d)
		}
		if w := time.Since(start); w != 100*time.Millisecond {
			t.Fatalf("refused after %v, want the 100ms queue wait", w)
		}
		second.Report(success, 0)
	})
}

// The count window: 50% over the last 20 calls. With the consecutive gate
// off, 19 straight failures after one success do not trip (19 outcomes);
// the 20th outcome does (19 of 20). After successes fill the ring, the 10th
// failure in the last 20 calls trips.
func TestCountWindow(t *testing.T) {
	pol := registry.Policy{CountWindow: 20, FailureRate: 0.5, DisableConsecutiveFailures: true, DisableSlowInFlight: true, NoJitter: true}
	_, _, b := newBreaker(t, pol)
	report(t, b, success)
	for range 18 {
		report(t, b, failure)
	}
	wantState(t, b, closed, 0)
	report(t, b, failure)
	if st := b.State(); st != open {
		t.Fatalf("state = %v after 19 failures in 20 calls", st)
	}

	_, _, b = newBreaker(t, pol)
	for range 30 {
		report(t, b, success)
	}
	for i := 1; i <= 10; i++ {
		report(t, b, failure)
		if st := b.State(); (st == open) != (i == 10) {
			t.Fatalf("after %d failures in the last 20 calls: %v", i, st)
		}
	}
}

// Switching the consecutive gate off: 19 failures in a row do not trip
// (the rate gate needs MinCalls=20 calls), the 20th does.
func TestConsecutiveGateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{DisableConsecutiveFailures: true, DisableSlowInFlight: true}))
		b := mustGet(t, r, "svc")
		for range 19 {
			report(t, b, failure)
		}
		wantState(t, b, closed, 0)
		report(t, b, failure)
		if st := b.State(); st != open {
			t.Fatalf("state = %v after 20 failures", st)
		}
	})
}

// While a probe is out, retry_after is the time left until the probe's
// timeout — min(probe lease, call timeout, slowness threshold) — and a
// hanging probe fails at that timeout.
func TestProbeTimeoutBoundsRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pol    registry.Policy
		budget time.Duration // Breaker.SetCallBudget, if set
		want   time.Duration
	}{
		{"lease", registry.Policy{DisableSlowInFlight: true}, 0, 60 * time.Second},
		{"call_timeout", registry.Policy{CallTimeout: 5 * time.Second, DisableSlowInFlight: true}, 0, 5 * time.Second},
		{"slow_in_flight", registry.Policy{CallTimeout: 5 * time.Second, SlowInFlight: 2 * time.Second}, 0, 2 * time.Second},
		{"client_budget", registry.Policy{DisableSlowInFlight: true}, 45 * time.Second, 45 * time.Second},
		{"call_timeout_under_budget", registry.Policy{CallTimeout: 5 * time.Second, DisableSlowInFlight: true}, 45 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pol.NoJitter = true
			clk, r, b := newBreaker(t, tc.pol)
			b.SetCallBudget(tc.budget)
			rec := record(t, r)
			trip(t, b)
			clk.Advance(31 * time.Second)
			p := mustReserve(t, b)
			clk.Advance(time.Second)
			_, d := b.Reserve()
			if d.Reason != registry.RefusedProbeBusy || d.RetryAfter != tc.want-time.Second {
				t.Fatalf("while the probe is out: %+v, want retry_after %v", d, tc.want-time.Second)
			}
			clk.Advance(tc.want - time.Second)
			if st := b.State(); st != open {
				t.Fatalf("state = %v once the probe timed out", st)
			}
			got := rec.briefs(t)
			if last := got[len(got)-1]; !strings.Contains(last, "lease_expired") {
				t.Fatalf("transitions = %v", got)
			}
			p.Report(success, 0) // too late: ignored
			if st := b.State(); st != open {
				t.Fatalf("late probe success moved the breaker: %v", st)
			}
		})
	}
}

// A health check replaces the user's call as the half-open probe: the call
// is refused with half_open_busy for at most the probe timeout, the check
// runs once, and its success closes the breaker.
func TestHealthCheckProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan error)
		var checks int
		r := registry.MustNew(
			registry.WithDefaultPolicy(registry.Policy{CallTimeout: 5 * time.Second, NoJitter: true, DisableSlowInFlight: true}),
			registry.WithHealthCheck("svc", func(ctx context.Context) error {
				checks++
				select {
				case err := <-release:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}),
		)
		b := mustGet(t, r, "svc")
		trip(t, b)
		time.Sleep(31 * time.Second)
		for range 2 {
			_, d := b.Reserve()
			if d.Allowed || d.Reason != registry.RefusedProbeBusy || d.RetryAfter > 5*time.Second {
				t.Fatalf("user call during the health check: %+v", d)
			}
		}
		release <- errors.New("still down")
		synctest.Wait()
		if st := b.State(); st != open {
			t.Fatalf("state = %v after a failed health check", st)
		}
		time.Sleep(61 * time.Second) // the hold grew to 60s
		if _, d := b.Reserve(); d.Reason != registry.RefusedProbeBusy {
			t.Fatalf("second probe: %+v", d)
		}
		release <- nil
		synctest.Wait()
		wantState(t, b, closed, 0)
		res := mustReserve(t, b)
		res.Report(success, 0)
		// A hanging health check fails at the call timeout.
		trip(t, b)
		time.Sleep(31 * time.Second)
		b.Reserve()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if st := b.State(); st != open {
			t.Fatalf("state = %v after a hanging health check", st)
		}
		cc := b.ContainCounts()
		if checks != 3 || cc.HealthChecks != 3 || cc.HealthCheckFailures != 2 {
			t.Fatalf("checks = %d, counts = %+v", checks, cc)
		}
	})
}

// 64 goroutines through one breaker with a bulkhead and in-flight
// slowness: every slot is returned, the cap holds, nothing races.
func TestContainConcurrent(t *testing.T) {
	for _, pol := range []registry.Policy{
		{MaxConcurrent: 16, SlowInFlight: time.Hour, CountWindow: 50, ConsecutiveFailures: 1 << 20, FailureRate: 1},
		// A threshold the calls do cross: the detector evaluates, judges and
		// trips concurrently with admissions and reports.
		{MaxConcurrent: 16, QueueWait: time.Millisecond, SlowInFlight: 2 * time.Millisecond, SlowInFlightCalls: 2, CountWindow: 20},
		{SlowInFlightFactor: 1, SlowInFlightCalls: 2},
	} {
		pol.OpenFor, pol.MaxOpenFor = time.Millisecond, time.Millisecond
		r := registry.MustNew(registry.WithDefaultPolicy(pol))
		b := mustGet(t, r, "svc")
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for range 300 {
					var o registry.Outcome
					switch rng.IntN(3) {
					case 1:
						o = failure
					case 2:
						o = excluded
					}
					if rng.IntN(2) == 0 {
						if res, d := b.Reserve(); d.Allowed {
							if rng.IntN(8) == 0 {
								time.Sleep(3 * time.Millisecond) // a slow call
							}
							res.Report(o, 0)
						}
					} else if tk, d := b.Admit(); d.Allowed {
						tk.Done(o)
						tk.Done(success) // ignored
					}
					_ = b.State()
				}
			}()
		}
		wg.Wait()
		cc := b.ContainCounts()
		if cc.InFlight != 0 || (pol.MaxConcurrent > 0 && cc.PeakInFlight > pol.MaxConcurrent) {
			t.Fatalf("%+v: contain counts = %+v", pol, cc)
		}
	}
}

func TestContainPolicyValidate(t *testing.T) {
	err := registry.Policy{
		CallTimeout: -1, DisableConsecutiveFailures: true, DisableFailureRate: true,
		CountWindow: 10, MinCalls: 11, SlowInFlight: 5 * time.Second, SlowInFlightFactor: 0.5,
		SlowInFlightCalls: -1, MaxConcurrent: -1, QueueWait: 2 * time.Minute,
	}.Validate()
	want := []string{
		"call_timeout: must be ≥ 0", "disable_consecutive_failures: cannot be combined",
		"min_calls: must be ≤ count_window (10), got 11", "slow_in_flight_factor: must be in [1, 1000]",
		"slow_in_flight_calls: must be in",
		"max_concurrent: must be in", "queue_wait: must be in",
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v; missing %q", err, w)
		}
	}
	for _, tc := range []struct {
		pol  registry.Policy
		want string
	}{
		{registry.Policy{CountWindow: 10001}, "count_window: must be in [0, 10000]"},
		{registry.Policy{SlowInFlight: 5 * time.Second, CallTimeout: 5 * time.Second}, "slow_in_flight: must be below call_timeout"},
		{registry.Policy{QueueWait: time.Second}, "queue_wait: requires max_concurrent"},
	} {
		if err := tc.pol.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.pol, err, tc.want)
		}
	}
	if err := (registry.Policy{CountWindow: 10, MaxConcurrent: 20, QueueWait: time.Second, SlowInFlight: time.Second, CallTimeout: 5 * time.Second}).Validate(); err != nil {
		t.Errorf("valid policy: %v", err)
	}
	if p := (registry.Policy{CountWindow: 10}).WithDefaults(); p.MinCalls != 10 {
		t.Errorf("MinCalls with a 10-call window = %d, want 10", p.MinCalls)
	}
	if _, err := registry.New(registry.WithHealthCheck("", func(context.Context) error { return nil }), registry.WithHealthCheck("svc", nil)); err == nil ||
		!strings.Contains(err.Error(), "invalid dependency key") || !strings.Contains(err.Error(), "must not be nil") {
		t.Errorf("New with bad health checks: %v", err)
	}
}

// DisableSlowInFlight wins over an inherited threshold or factor.
func TestDisableSlowInFlightWins(t *testing.T) {
	p := registry.Policy{SlowInFlight: time.Second, SlowInFlightFactor: 4, DisableSlowInFlight: true}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	clk, _, b := newBreaker(t, p)
	var hung []registry.Reservation
	for range 10 {
		hung = append(hung, mustReserve(t, b))
		clk.Advance(time.Second)
	}
	if cc := b.ContainCounts(); cc.SlowThreshold != 0 || b.State() != closed {
		t.Fatalf("slowness still on: %+v", cc)
	}
	for _, h := range hung {
		h.Report(success, 0)
	}
}
