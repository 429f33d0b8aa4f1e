package registry_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

func TestPolicyValidate(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		p     registry.Policy
		field string // "" = valid
	}{
		{"zero", registry.Policy{}, ""},
		{"all set", registry.Policy{
			ConsecutiveFailures: 3, FailureRate: 0.25, MinCalls: 10, Window: time.Minute, SlowCall: time.Second,
			OpenFor: time.Second, OpenBackoff: 1.5, MaxOpenFor: time.Minute, OpenJitter: 0.2,
			HalfOpenProbes: 2, ProbeLease: 5 * time.Second, MaxRetryHint: time.Minute,
		}, ""},
		{"boundaries", registry.Policy{FailureRate: 1, OpenBackoff: 100, OpenJitter: 1, HalfOpenProbes: 1000, Window: 10 * time.Millisecond}, ""},
		{"backoff 1", registry.Policy{OpenBackoff: 1}, ""},
		{"max open for equals open for", registry.Policy{OpenFor: time.Minute, MaxOpenFor: time.Minute}, ""},
		{"max open for above the default open for", registry.Policy{MaxOpenFor: 30 * time.Second}, ""},
		{"slow call within the default lease", registry.Policy{SlowCall: 60 * time.Second, Window: 2 * time.Minute}, ""},
		{"window just above slow call", registry.Policy{Window: 10*time.Second + 1, SlowCall: 10 * time.Second}, ""},
		{"window of a day", registry.Policy{Window: 24 * time.Hour}, ""},

		{"negative consecutive failures", registry.Policy{ConsecutiveFailures: -1}, "consecutive_failures"},
		{"negative failure rate", registry.Policy{FailureRate: -0.1}, "failure_rate"},
		{"failure rate above 1", registry.Policy{FailureRate: 1.01}, "failure_rate"},
		{"failure rate NaN", registry.Policy{FailureRate: nan}, "failure_rate"},
		{"failure rate +Inf", registry.Policy{FailureRate: math.Inf(1)}, "failure_rate"},
		{"negative min calls", registry.Policy{MinCalls: -5}, "min_calls"},
		{"negative window", registry.Policy{Window: -time.Second}, "window"},
		{"window below 10ms", registry.Policy{Window: 9 * time.Millisecond}, "window"},
		{"window above a day", registry.Policy{Window: 24*time.Hour + 1}, "window"},
		{"window near overflow", registry.Policy{Window: math.MaxInt64}, "window"},
		{"negative slow call", registry.Policy{SlowCall: -1}, "slow_call"},
		{"negative open for", registry.Policy{OpenFor: -1}, "open_for"},
		{"backoff below 1", registry.Policy{OpenBackoff: 0.5}, "open_backoff"},
		{"backoff above 100", registry.Policy{OpenBackoff: 101}, "open_backoff"},
		{"backoff NaN", registry.Policy{OpenBackoff: nan}, "open_backoff"},
		{"backoff negative", registry.Policy{OpenBackoff: -2}, "open_backoff"},
		{"negative max open for", registry.Policy{MaxOpenFor: -1}, "max_open_for"},
		{"max open for below open for", registry.Policy{OpenFor: time.Minute, MaxOpenFor: time.Second}, "max_open_for"},
		{"max open for below the default open for", registry.Policy{MaxOpenFor: 10 * time.Second}, "max_open_for"},
		{"negative jitter", registry.Policy{OpenJitter: -0.1}, "open_jitter"},
		{"jitter above 1", registry.Policy{OpenJitter: 1.5}, "open_jitter"},
		{"jitter NaN", registry.Policy{OpenJitter: nan}, "open_jitter"},
		{"negative probes", registry.Policy{HalfOpenProbes: -1}, "half_open_probes"},
		{"too many probes", registry.Policy{HalfOpenProbes: 1001}, "half_open_probes"},
		{"negative lease", registry.Policy{ProbeLease: -1}, "probe_lease"},
		{"lease below slow call", registry.Policy{SlowCall: 10 * time.Second, ProbeLease: 5 * time.Second}, "probe_lease"},
		{"default lease below slow call", registry.Policy{SlowCall: 2 * time.Minute, Window: 5 * time.Minute}, "probe_lease"},
		// The layered-timeout rule (layers.go): a call slower than the window
		// is never counted.
		{"window equal to slow call", registry.Policy{Window: 10 * time.Second, SlowCall: 10 * time.Second}, "window"},
		{"window below slow call", registry.Policy{Window: time.Second, SlowCall: 10 * time.Second}, "window"},
		{"default window below slow call", registry.Policy{SlowCall: 90 * time.Second, ProbeLease: 2 * time.Minute}, "window"},
		{"negative max retry hint", registry.Policy{MaxRetryHint: -1}, "max_retry_hint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error about %s", tt.field)
			}
			if !strings.HasPrefix(err.Error(), tt.field+": ") || strings.Count(err.Error(), "\n") != 0 {
				t.Fatalf("Validate() = %q, want one error about %s", err, tt.field)
			}
			// New rejects it too, naming the policy.
			_, err = registry.New(registry.WithDefaultPolicy(tt.p))
			if err == nil || !strings.Contains(err.Error(), "default policy: "+tt.field) {
				t.Fatalf("New = %v", err)
			}
		})
	}
}

// One policy with a problem in every field: one error naming every field.
func TestPolicyValidateReportsEveryProblem(t *testing.T) {
	p := registry.Policy{
		ConsecutiveFailures: -1, FailureRate: 2, MinCalls: -1, Window: -1, SlowCall: -1, OpenFor: -1,
		OpenBackoff: 0.5, MaxOpenFor: -1, OpenJitter: -1, HalfOpenProbes: -1, ProbeLease: -1, MaxRetryHint: -1,
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	fields := []string{
		"consecutive_failures", "failure_rate", "min_calls", "window", "slow_call", "open_for",
		"open_backoff", "max_open_for", "open_jitter", "half_open_probes", "probe_lease", "max_retry_hint",
	}
	for _, f := range fields {
		if !strings.Contains(err.Error(), f+": ") {
			t.Errorf("error does not mention %s:\n%v", f, err)
		}
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != len(fields) {
		t.Errorf("%d joined errors, want %d:\n%v", n, len(fields), err)
	}
}

// New reports every problem of every option at once.
func TestNewReportsEveryProblem(t *testing.T) {
	_, err := registry.New(
		registry.WithClock(nil),
		registry.WithRand(nil),
		registry.WithDefaultPolicy(registry.Policy{FailureRate: 3, HalfOpenProbes: -2}),
		registry.WithPolicy("search", registry.Policy{OpenJitter: 7}),
		registry.WithPolicy("", registry.Policy{}),
		registry.WithPolicy("ok", registry.Policy{}),
		registry.WithMaxBreakers(-1),
		registry.WithNotifyQueue(-1),
	)
	if err == nil {
		t.Fatal("New succeeded")
	}
	for _, want := range []string{
		"clock: must not be nil",
		"rand: must not be nil",
		"default policy: failure_rate",
		"default policy: half_open_probes",
		`policy "search": open_jitter`,
		`policy key "": registry: invalid dependency key`,
		"max breakers: must be in [0, 1048576]",
		"notify queue: must be in [0, 1048576]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if !errors.Is(err, registry.ErrInvalidKey) {
		t.Error("errors.Is(err, ErrInvalidKey) = false")
	}
	if _, err := registry.New(registry.WithMaxBreakers(1),
		registry.WithPolicy("a", registry.Policy{}), registry.WithPolicy("b", registry.Policy{})); err == nil ||
		!strings.Contains(err.Error(), "2 policies configured but the cap is 1") {
		t.Errorf("more policies than the cap: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNew did not panic on a bad option")
		}
	}()
	registry.MustNew(registry.WithMaxBreakers(-1))
}

// FuzzPolicy: for arbitrary numbers, New returns an error (exactly when
// Validate does) or a registry whose breaker trips, holds, probes and
// closes without panicking and within its policy's bounds.
func FuzzPolicy(f *testing.F) {
	f.Add(5, 0.5, 20, int64(60*time.Second), false, int64(0), int64(30*time.Second), 2.0, int64(5*time.Minute), 0.1, false, 1, int64(60*time.Second), int64(time.Hour), 0.5)
	f.Add(0, 0.0, 0, int64(0), false, int64(0), int64(0), 0.0, int64(0), 0.0, false, 0, int64(0), int64(0), 0.0)
	f.Add(1, 1.0, 1, int64(10*time.Millisecond), true, int64(time.Second), int64(1), 100.0, int64(math.MaxInt64), 1.0, false, 1000, int64(math.MaxInt64), int64(math.MaxInt64), 0.999)
	f.Add(-1, math.NaN(), -1, int64(-1), false, int64(-1), int64(-1), math.Inf(1), int64(-1), -1.0, true, -1, int64(-1), int64(-1), 0.0)
	f.Add(3, 0.3, 5, int64(math.MaxInt64), false, int64(0), int64(math.MaxInt64), 1.0, int64(0), 0.0, true, 3, int64(0), int64(0), 0.0)
	f.Fuzz(func(t *testing.T, consecutive int, rate float64, minCalls int, window int64, noRate bool, slow, openFor int64,
		backoff float64, maxOpenFor int64, jitter float64, noJitter bool, probes int, lease, maxHint int64, u float64) {
		p := registry.Policy{
			ConsecutiveFailures: consecutive, FailureRate: rate, MinCalls: minCalls, Window: time.Duration(window),
			DisableFailureRate: noRate, SlowCall: time.Duration(slow), OpenFor: time.Duration(openFor),
			OpenBackoff: backoff, MaxOpenFor: time.Duration(maxOpenFor), OpenJitter: jitter, NoJitter: noJitter,
			HalfOpenProbes: probes, ProbeLease: time.Duration(lease), MaxRetryHint: time.Duration(maxHint),
		}
		clk := registrytest.NewFakeClock(t0)
		r, err := registry.New(registry.WithClock(clk), registry.WithDefaultPolicy(p),
			registry.WithRand(func() float64 { return u }))
		if verr := p.Validate(); (err == nil) != (verr == nil) {
			t.Fatalf("New error %v but Validate %v", err, verr)
		}
		if err != nil {
			return
		}
		b, err := r.Get("svc")
		if err != nil {
			t.Fatal(err)
		}
		pol := b.Policy()
		if pol.Validate() != nil {
			t.Fatalf("resolved policy invalid: %v", pol.Validate())
		}
		// Trip: at most ConsecutiveFailures failures (bounded for huge values).
		for i := 0; i < min(pol.ConsecutiveFailures, 1000) && b.State() == closed; i++ {
			tk, d := b.Admit()
			if !d.Allowed {
				t.Fatalf("refused while closed: %+v", d)
			}
			tk.Done(failure)
			tk.Done(success)
		}
		if pol.ConsecutiveFailures > 1000 {
			return
		}
		st := b.Status()
		if st.State != open {
			t.Fatalf("not open after %d consecutive failures: %+v", pol.ConsecutiveFailures, st)
		}
		if st.RetryAfter < pol.OpenFor {
			t.Fatalf("hold %v shorter than open_for %v", st.RetryAfter, pol.OpenFor)
		}
		if limit := float64(pol.OpenFor) * (1 + pol.OpenJitter); float64(st.RetryAfter) > limit*(1+1e-9)+1 {
			t.Fatalf("hold %v longer than open_for %v × (1 + jitter %v)", st.RetryAfter, pol.OpenFor, pol.OpenJitter)
		}
		for round := range 4 {
			// Hold: never negative, never shortened by jitter.
			ra := b.RetryAfter()
			if ra < 0 {
				t.Fatalf("round %d: negative retry_after %v", round, ra)
			}
			clk.Advance(ra)
			tk, d := b.Admit()
			if !d.Allowed {
				// A zero hold may still be open on gobreaker's side for 1ns.
				if ra != 0 {
					t.Fatalf("round %d: refused after the hold: %+v", round, d)
				}
				return
			}
			if !tk.Probe() {
				t.Fatalf("round %d: not a probe", round)
			}
			// A re-trip holds at least OpenFor: growth and jitter never
			// wrap the hold into the past.
			wantReopened := func(how string) {
				t.Helper()
				if st, ra := b.State(), b.RetryAfter(); st != open || ra < pol.OpenFor {
					t.Fatalf("round %d: after %s: %v, retry_after %v; want open for ≥ %v", round, how, st, ra, pol.OpenFor)
				}
			}
			if round%2 == 0 {
				tk.Done(failure)
				wantReopened("a failed probe")
				continue
			}
			// A lost probe: expiry after the lease.
			clk.Advance(b.RetryAfter())
			if pol.HalfOpenProbes == 1 {
				wantReopened("a lost probe")
			} else if st := b.State(); st == closed {
				t.Fatalf("round %d: closed by a lost probe", round)
			}
			if tk.Done(success) && pol.ProbeLease > 0 && b.State() == closed && pol.HalfOpenProbes == 1 {
				t.Fatalf("round %d: a late probe closed the breaker", round)
			}
		}
		b.ObserveRetryAfter(time.Duration(maxHint))
		if ra := b.RetryAfter(); ra < 0 {
			t.Fatalf("negative retry_after %v after a hint", ra)
		}
		b.Reset()
		if b.State() != closed {
			t.Fatal("not closed after Reset")
		}
	})
}
