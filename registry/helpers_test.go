package registry_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// t0 is the start of every FakeClock timeline.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	closed   = registry.StateClosed
	halfOpen = registry.StateHalfOpen
	open     = registry.StateOpen

	success  = registry.Success
	failure  = registry.Failure
	excluded = registry.Excluded
)

// newRegistry returns a registry on clk whose default policy is pol.
func newRegistry(t testing.TB, clk registry.Clock, pol registry.Policy, opts ...registry.Option) *registry.Registry {
	t.Helper()
	all := append([]registry.Option{registry.WithClock(clk), registry.WithDefaultPolicy(pol)}, opts...)
	r, err := registry.New(all...)
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	return r
}

// newBreaker returns a fresh FakeClock at t0 and the breaker "svc" of a
// registry whose default policy is pol.
func newBreaker(t testing.TB, pol registry.Policy, opts ...registry.Option) (*registrytest.FakeClock, *registry.Registry, *registry.Breaker) {
	t.Helper()
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, pol, opts...)
	return clk, r, mustGet(t, r, "svc")
}

func mustGet(t testing.TB, r *registry.Registry, k registry.Key) *registry.Breaker {
	t.Helper()
	b, err := r.Get(k)
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	return b
}

// mustAdmit admits a call or fails the test.
func mustAdmit(t testing.TB, b *registry.Breaker) registry.Ticket {
	t.Helper()
	tk, d := b.Admit()
	if !d.Allowed {
		t.Fatalf("Admit refused: %+v", d)
	}
	return tk
}

// report admits one call and reports o.
func report(t testing.TB, b *registry.Breaker, o registry.Outcome) {
	t.Helper()
	if !mustAdmit(t, b).Done(o) {
		t.Fatalf("Done(%v) of a fresh ticket returned false", o)
	}
}

// trip reports failures until b opens (at most 1,000).
func trip(t testing.TB, b *registry.Breaker) {
	t.Helper()
	for range 1000 {
		if b.State() == open {
			return
		}
		report(t, b, failure)
	}
	t.Fatalf("breaker did not open after 1,000 failures: %+v", b.Status())
}

// wantState checks b's public state and retry-after together.
func wantState(t testing.TB, b *registry.Breaker, st registry.State, ra time.Duration) {
	t.Helper()
	s := b.Status()
	if s.State != st || s.RetryAfter != ra {
		t.Fatalf("state = %v retry_after = %v; want %v, %v", s.State, s.RetryAfter, st, ra)
	}
}

// recorder is a subscriber that keeps every transition.
type recorder struct {
	r  *registry.Registry
	mu sync.Mutex
	tr []registry.Transition
}

func record(t testing.TB, r *registry.Registry) *recorder {
	rec := &recorder{r: r}
	t.Cleanup(r.Subscribe(func(tr registry.Transition) {
		rec.mu.Lock()
		rec.tr = append(rec.tr, tr)
		rec.mu.Unlock()
	}))
	return rec
}

// all flushes the registry and returns every transition delivered so far.
func (rec *recorder) all(t testing.TB) []registry.Transition {
	t.Helper()
	if err := rec.r.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]registry.Transition(nil), rec.tr...)
}

// briefs flushes and returns the transitions as "key:from>to:cause".
func (rec *recorder) briefs(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, tr := range rec.all(t) {
		out = append(out, brief(tr))
	}
	return out
}

func brief(tr registry.Transition) string {
	return fmt.Sprintf("%s:%s>%s:%s", tr.Key, tr.From, tr.To, tr.Cause)
}

// ---- timeline tables ----

// step is one row of a timeline: at time t0+at, do op, then want.
type step struct {
	at   time.Duration
	op   op
	want want
}

type opKind int

const (
	opCheck opKind = iota // nothing: only check
	opCall                // Admit, then Done(outcome) at once if admitted; n times
	opAdmit               // Admit and keep the ticket under a name
	opDone                // Done(outcome) on a named ticket, with an optional hint
	opHint                // ObserveRetryAfter(hint)
)

type op struct {
	kind    opKind
	n       int
	outcome registry.Outcome
	name    string
	hint    time.Duration
}

// want is the expected state after the step. For opCall and opAdmit, reason
// is the expected refusal (NotRefused: admitted), and a refusal must carry
// RetryAfter == retry.
type want struct {
	state  registry.State
	retry  time.Duration
	reason registry.Refusal
}

func check() op                               { return op{kind: opCheck} }
func call(o registry.Outcome) op              { return op{kind: opCall, n: 1, outcome: o} }
func calls(n int, o registry.Outcome) op      { return op{kind: opCall, n: n, outcome: o} }
func admit(name string) op                    { return op{kind: opAdmit, name: name} }
func done(name string, o registry.Outcome) op { return op{kind: opDone, name: name, outcome: o} }
func hint(d time.Duration) op                 { return op{kind: opHint, hint: d} }
func refusedCall() op                         { return op{kind: opCall, n: 1} }
func doneHint(name string, o registry.Outcome, h time.Duration) op {
	return op{kind: opDone, name: name, outcome: o, hint: h}
}

func (o op) String() string {
	switch o.kind {
	case opCall:
		if o.n == 1 {
			return fmt.Sprintf("call(%v)", o.outcome)
		}
		return fmt.Sprintf("%d×call(%v)", o.n, o.outcome)
	case opAdmit:
		return fmt.Sprintf("admit(%s)", o.name)
	case opDone:
		if o.hint > 0 {
			return fmt.Sprintf("done(%s, %v, hint %v)", o.name, o.outcome, o.hint)
		}
		return fmt.Sprintf("done(%s, %v)", o.name, o.outcome)
	case opHint:
		return fmt.Sprintf("hint(%v)", o.hint)
	}
	return "check"
}

// timeCtl moves time to t0+at.
type timeCtl interface{ advanceTo(at time.Duration) }

type fakeTime struct{ clk *registrytest.FakeClock }

func (f fakeTime) advanceTo(at time.Duration) { f.clk.Set(t0.Add(at)) }

// virtualTime advances a testing/synctest bubble's clock. Inside a bubble a
// timer fires as soon as every goroutine is blocked, so this takes no real
// time.
type virtualTime struct{ start time.Time }

func (v virtualTime) advanceTo(at time.Duration) {
	if d := time.Until(v.start.Add(at)); d > 0 {
		<-time.After(d)
	}
}

// runTimeline plays steps against b and checks every row. The log of the
// rows so far is printed on failure.
func runTimeline(t *testing.T, tc timeCtl, b *registry.Breaker, steps []step) {
	t.Helper()
	tickets := map[string]registry.Ticket{}
	var log strings.Builder
	fail := func(i int, format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d (t0+%v %v): %s\ntimeline so far:\n%s", i, steps[i].at, steps[i].op, fmt.Sprintf(format, args...), log.String())
	}
	last := time.Duration(-1)
	for i, s := range steps {
		if s.at < last {
			t.Fatalf("step %d: time goes backwards", i)
		}
		last = s.at
		tc.advanceTo(s.at)
		switch s.op.kind {
		case opCall, opAdmit:
			n := max(s.op.n, 1)
			for j := range n {
				tk, d := b.Admit()
				if d.Reason != s.want.reason || d.Allowed != (s.want.reason == registry.NotRefused) {
					fail(i, "call %d: decision %+v, want reason %v", j, d, s.want.reason)
				}
				if !d.Allowed {
					if d.RetryAfter != s.want.retry {
						fail(i, "refusal retry_after = %v, want %v", d.RetryAfter, s.want.retry)
					}
					continue
				}
				if d.RetryAfter != 0 {
					fail(i, "admitted with retry_after %v", d.RetryAfter)
				}
				if s.op.kind == opAdmit {
					tickets[s.op.name] = tk
				} else if !tk.Done(s.op.outcome) {
					fail(i, "Done returned false")
				}
			}
		case opDone:
			tk, ok := tickets[s.op.name]
			if !ok {
				t.Fatalf("step %d: no ticket %q", i, s.op.name)
			}
			if !tk.DoneWithRetryAfter(s.op.outcome, s.op.hint) {
				fail(i, "Done returned false")
			}
		case opHint:
			b.ObserveRetryAfter(s.op.hint)
		}
		st := b.Status()
		fmt.Fprintf(&log, "  t0+%-8v %-28v → %v retry_after=%v\n", s.at, s.op, st.State, st.RetryAfter)
		if st.State != s.want.state || st.RetryAfter != s.want.retry {
			fail(i, "got %v retry_after=%v, want %v retry_after=%v", st.State, st.RetryAfter, s.want.state, s.want.retry)
		}
	}
}
