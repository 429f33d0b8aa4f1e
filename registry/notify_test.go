package registry_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/google/go-cmp/cmp"
)

// B9: transition notifications are ordered, never block the breaker, may
// call back into the registry, survive panicking subscribers, drop (and
// count) on overflow, and leave no goroutine behind.

var notifyPolicy = registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, OpenBackoff: 1, NoJitter: true, ProbeLease: time.Second}

// advancer moves a test's time: a *registrytest.FakeClock, or bubble for
// the system clock inside a synctest bubble.
type advancer interface{ Advance(time.Duration) }

// bubble advances a synctest bubble's virtual clock. (A FakeClock inside a
// bubble would not do: gobreaker reads time.Now and must see time pass
// between a trip and the probe.)
type bubble struct{}

func (bubble) Advance(d time.Duration) { <-time.After(d) }

// bubbleRegistry returns a registry on the (virtual) system clock.
func bubbleRegistry(t *testing.T, pol registry.Policy, opts ...registry.Option) (bubble, *registry.Registry) {
	t.Helper()
	return bubble{}, newRegistry(t, registry.SystemClock(), pol, opts...)
}

// cycle drives b through closed→open→half_open→open→half_open→closed.
func cycle(t testing.TB, clk advancer, b *registry.Breaker) {
	t.Helper()
	trip(t, b)
	clk.Advance(time.Second)
	mustAdmit(t, b).Done(failure)
	clk.Advance(time.Second)
	mustAdmit(t, b).Done(success)
}

var cycleBriefs = []string{
	"closed>open:trip", "open>half_open:hold_expired", "half_open>open:probe_failed",
	"open>half_open:hold_expired", "half_open>closed:probe_succeeded",
}

func TestSubscribeOrder(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, notifyPolicy)
	rec := record(t, r)
	a, b := mustGet(t, r, "a"), mustGet(t, r, "b")

	// Interleave two keys' timelines.
	for range 50 {
		trip(t, a)
		trip(t, b)
		clk.Advance(time.Second)
		mustAdmit(t, a).Done(failure)
		mustAdmit(t, b).Done(success)
		clk.Advance(time.Second)
		mustAdmit(t, a).Done(success)
		b.Isolate()
		b.Reset()
	}

	got := rec.all(t)
	perKey := map[registry.Key][]string{}
	for i, tr := range got {
		if i > 0 && tr.Seq != got[i-1].Seq+1 {
			t.Fatalf("Seq %d follows %d: want strictly increasing without gaps", tr.Seq, got[i-1].Seq)
		}
		perKey[tr.Key] = append(perKey[tr.Key], brief(tr)[2:])
	}
	var wantA, wantB []string
	for range 50 {
		wantA = append(wantA, cycleBriefs...)
		wantB = append(wantB, "closed>open:trip", "open>half_open:hold_expired", "half_open>closed:probe_succeeded",
			"closed>open:isolated", "open>closed:reset")
	}
	if diff := cmp.Diff(map[registry.Key][]string{"a": wantA, "b": wantB}, perKey); diff != "" {
		t.Errorf("per-key transitions (-want +got):\n%s", diff)
	}
	// Each transition's From is the previous To of its key.
	last := map[registry.Key]registry.State{}
	for _, tr := range got {
		if tr.From != last[tr.Key] {
			t.Fatalf("seq %d %s: From %v, previous To %v", tr.Seq, tr.Key, tr.From, last[tr.Key])
		}
		last[tr.Key] = tr.To
	}
}

// Concurrent transitions on many keys: each subscriber sees Seq strictly
// increasing and each key's transitions alternate consistently.
func TestSubscribeOrderConcurrent(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{ConsecutiveFailures: 1, NoJitter: true})
	rec := record(t, r)
	keys := []registry.Key{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	var wg sync.WaitGroup
	for _, k := range keys {
		b := mustGet(t, r, k)
		wg.Go(func() {
			for range 200 {
				trip(t, b)
				b.Reset()
			}
		})
	}
	wg.Wait()
	got := rec.all(t)
	if len(got) != len(keys)*400 {
		t.Fatalf("%d transitions, want %d", len(got), len(keys)*400)
	}
	last := map[registry.Key]registry.State{}
	for i, tr := range got {
		if i > 0 && tr.Seq <= got[i-1].Seq {
			t.Fatalf("Seq %d after %d", tr.Seq, got[i-1].Seq)
		}
		if tr.From != last[tr.Key] {
			t.Fatalf("seq %d %s: From %v, previous To %v", tr.Seq, tr.Key, tr.From, last[tr.Key])
		}
		last[tr.Key] = tr.To
	}
}

// A subscriber blocked on a channel the test holds does not block Admit,
// Done, State or further transitions; once released it receives every
// transition, in order.
func TestBlockedSubscriberDoesNotBlockBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, r := bubbleRegistry(t, notifyPolicy)
		b := mustGet(t, r, "svc")
		entered, release := make(chan struct{}), make(chan struct{})
		var got []string
		var once sync.Once
		r.Subscribe(func(tr registry.Transition) {
			once.Do(func() {
				close(entered)
				<-release
			})
			got = append(got, brief(tr)[4:])
		})

		trip(t, b)
		<-entered // the subscriber is now blocked inside its first delivery

		// Every operation completes while it stays blocked.
		for range 100 {
			clk.Advance(time.Second)
			mustAdmit(t, b).Done(failure)
			_ = b.State()
			_ = r.Snapshot()
		}
		clk.Advance(time.Second)
		mustAdmit(t, b).Done(success)
		select {
		case <-release:
			t.Fatal("released early")
		default:
		}

		close(release)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := []string{"closed>open:trip"}
		for range 100 {
			want = append(want, "open>half_open:hold_expired", "half_open>open:probe_failed")
		}
		want = append(want, "open>half_open:hold_expired", "half_open>closed:probe_succeeded")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}
	})
}

// A subscriber may call back into the registry and the breaker.
func TestSubscriberReentry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, r := bubbleRegistry(t, notifyPolicy)
		b := mustGet(t, r, "svc")
		var seen []string
		r.Subscribe(func(tr registry.Transition) {
			br, ok := r.Lookup(tr.Key)
			if !ok {
				t.Errorf("Lookup(%q) failed", tr.Key)
				return
			}
			snap := r.Snapshot()
			st := br.State()
			_ = br.Status()
			_ = br.Counts()
			_ = r.AnyUnavailable()
			other, err := r.Get("other")
			if err != nil {
				t.Error(err)
				return
			}
			_ = other.State()
			seen = append(seen, tr.To.String()+"/"+st.String()+"/"+snap[0].State.String())
		})
		cycle(t, clk, b)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(cycleBriefs) {
			t.Fatalf("subscriber saw %d transitions, want %d: %v", len(seen), len(cycleBriefs), seen)
		}
	})
}

// A panicking subscriber neither stops delivery to itself nor to others.
func TestPanickingSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, r := bubbleRegistry(t, notifyPolicy)
		b := mustGet(t, r, "svc")
		var calls atomic.Int32
		r.Subscribe(func(registry.Transition) {
			calls.Add(1)
			panic("subscriber bug")
		})
		rec := record(t, r)
		cycle(t, clk, b)
		if got := rec.briefs(t); len(got) != len(cycleBriefs) {
			t.Fatalf("healthy subscriber got %v", got)
		}
		if n := calls.Load(); n != int32(len(cycleBriefs)) {
			t.Fatalf("panicking subscriber called %d times, want %d", n, len(cycleBriefs))
		}
	})
}

// Past the queue limit, transitions are dropped and counted, and the
// subscriber sees the gap in Seq.
func TestNotifyQueueOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, r := bubbleRegistry(t, registry.Policy{ConsecutiveFailures: 1, NoJitter: true}, registry.WithNotifyQueue(2))
		b := mustGet(t, r, "svc")
		entered, release := make(chan struct{}), make(chan struct{})
		var seqs []uint64
		var once sync.Once
		r.Subscribe(func(tr registry.Transition) {
			once.Do(func() { close(entered); <-release })
			seqs = append(seqs, tr.Seq)
		})

		trip(t, b) // seq 1: being delivered, blocked
		<-entered
		b.Reset() // seq 2: queued
		trip(t, b)
		b.Reset() // seq 4: dropped (queue full)
		for range 4 {
			trip(t, b)
			b.Reset() // seq 5..12: dropped
		}
		if n := r.DroppedTransitions(); n != 9 {
			t.Errorf("DroppedTransitions = %d, want 9", n)
		}
		close(release)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		trip(t, b) // seq 13: delivered
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]uint64{1, 2, 3, 13}, seqs); diff != "" {
			t.Errorf("delivered Seq (-want +got):\n%s", diff)
		}
	})
}

// Flush returns once everything enqueued before it was delivered; it gives
// up with the context's error while a subscriber is stuck.
func TestFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, r := bubbleRegistry(t, notifyPolicy)
		b := mustGet(t, r, "svc")
		if err := r.Flush(t.Context()); err != nil {
			t.Fatalf("Flush with nothing queued: %v", err)
		}
		release := make(chan struct{})
		var n atomic.Int32
		r.Subscribe(func(registry.Transition) {
			<-release
			n.Add(1)
		})
		trip(t, b)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // virtual time
		defer cancel()
		if err := r.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush with a stuck subscriber = %v, want DeadlineExceeded", err)
		}
		close(release)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n.Load() != 1 {
			t.Fatalf("delivered %d, want 1", n.Load())
		}
	})
}

// Flush waits only for what was enqueued before it: a subscriber that keeps
// producing transitions (each delivery resets the breaker, which notifies
// again) does not hold it up.
func TestFlushUnderContinuousTransitions(t *testing.T) {
	const limit = 100000
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{ConsecutiveFailures: 1, NoJitter: true})
	b := mustGet(t, r, "svc")
	var stop atomic.Bool
	var produced atomic.Int32
	r.Subscribe(func(registry.Transition) {
		if !stop.Load() && produced.Add(1) < limit {
			b.Reset()
		}
	})
	trip(t, b)
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	if n := produced.Load(); n >= limit {
		t.Fatalf("Flush returned only after the subscriber stopped producing (%d transitions)", n)
	}
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, r := bubbleRegistry(t, notifyPolicy)
		b := mustGet(t, r, "svc")
		var gone atomic.Int32
		unsub := r.Subscribe(func(registry.Transition) { gone.Add(1) })
		rec := record(t, r)
		trip(t, b)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		unsub()
		unsub() // idempotent
		b.Reset()
		trip(t, b)
		if got := rec.briefs(t); len(got) != 3 {
			t.Fatalf("remaining subscriber got %v", got)
		}
		if n := gone.Load(); n != 1 {
			t.Fatalf("unsubscribed fn called %d times, want 1", n)
		}
	})
}

// A subscriber sees exactly the transitions that happen while it is
// subscribed: none queued before Subscribe returned (even if delivered
// later), and none delivered after its unsubscribe returned.
func TestSubscribeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, r := bubbleRegistry(t, registry.Policy{ConsecutiveFailures: 1, NoJitter: true})
		b := mustGet(t, r, "svc")
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		r.Subscribe(func(registry.Transition) { once.Do(func() { close(entered); <-release }) })

		trip(t, b) // seq 1, delivery blocked
		<-entered
		b.Reset() // seq 2, queued before late subscribes
		var late, early []uint64
		unsubLate := r.Subscribe(func(tr registry.Transition) { late = append(late, tr.Seq) })
		unsubEarly := r.Subscribe(func(tr registry.Transition) { early = append(early, tr.Seq) })
		trip(t, b)   // seq 3
		b.Reset()    // seq 4
		unsubEarly() // 3 and 4 are queued but not yet delivered
		close(release)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		unsubLate()
		trip(t, b) // seq 5
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]uint64{3, 4}, late); diff != "" {
			t.Errorf("late subscriber got (-want +got):\n%s", diff)
		}
		if len(early) != 0 {
			t.Errorf("unsubscribed subscriber got %v", early)
		}
	})
}

// No goroutine is left once everything is delivered: an idle registry holds
// none. Measured with runtime.NumGoroutine (synctest checks the same for the
// tests above when their bubble ends).
func TestNoGoroutineLeftAfterFlush(t *testing.T) {
	base := runtime.NumGoroutine()
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, notifyPolicy)
	unsub := r.Subscribe(func(registry.Transition) {})
	for i := range 20 {
		cycle(t, clk, mustGet(t, r, registry.Key("k"+string(rune('a'+i)))))
	}
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	unsub()
	n := 0
	for i := 0; i < 100000; i++ {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		runtime.Gosched()
	}
	buf := make([]byte, 1<<16)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("%d goroutines after Flush, baseline %d:\n%s", n, base, buf)
}

// Transitions carry the time and the hold of the registry's clock.
func TestTransitionFields(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	r := newRegistry(t, clk, registry.Policy{ConsecutiveFailures: 1, OpenFor: 7 * time.Second, NoJitter: true})
	rec := record(t, r)
	b := mustGet(t, r, "svc")
	clk.Advance(3 * time.Second)
	trip(t, b)
	got := rec.all(t)
	want := []registry.Transition{{Seq: got[0].Seq, Key: "svc", From: closed, To: open, Cause: registry.CauseTrip, At: t0.Add(3 * time.Second), RetryAfter: 7 * time.Second}}
	if !slices.Equal(want, got) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
