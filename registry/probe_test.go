package registry_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/google/go-cmp/cmp"
)

// Probe admission, leases and idempotent reporting: B1–B5 of the test plan
// (docs/gobreaker-notes.md §4.1).

// B1: half-open admits exactly HalfOpenProbes when 64 goroutines race, in
// 1,000 of 1,000 runs.
func TestHalfOpenAdmitsExactlyHalfOpenProbes(t *testing.T) {
	const runs, goroutines = 1000, 64
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("probes=%d", n), func(t *testing.T) {
			clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, HalfOpenProbes: n})
			hist := map[int32]int{}
			for range runs {
				b.Reset()
				trip(t, b)
				clk.Advance(10 * time.Second)
				start := make(chan struct{})
				var admitted, busy atomic.Int32
				var wg sync.WaitGroup
				for range goroutines {
					wg.Go(func() {
						<-start
						tk, d := b.Admit()
						switch {
						case d.Allowed && tk.Probe() && d.State == halfOpen:
							admitted.Add(1)
						case d.Allowed:
							t.Errorf("admitted a non-probe: %+v", d)
						case d.Reason == registry.RefusedProbeBusy:
							busy.Add(1)
						default:
							t.Errorf("unexpected refusal %+v", d)
						}
					})
				}
				close(start)
				wg.Wait()
				hist[admitted.Load()]++
				if busy.Load()+admitted.Load() != goroutines {
					t.Fatalf("admitted %d + busy %d != %d", admitted.Load(), busy.Load(), goroutines)
				}
			}
			if diff := cmp.Diff(map[int32]int{int32(n): runs}, hist); diff != "" {
				t.Fatalf("runs by number of admitted probes (-want +got):\n%s", diff)
			}
		})
	}
}

// B2: a probe whose outcome never arrives frees the breaker at lease
// expiry; both a state read and an Admit notice the expiry. The next probe
// is admitted after the grown hold, and a late report of the lost probe
// returns false and changes nothing.
func TestLostProbeExpiresAtLease(t *testing.T) {
	const (
		hold  = 10 * time.Second
		lease = 5 * time.Second
	)
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: hold, OpenBackoff: 2, NoJitter: true, ProbeLease: lease}
	for _, trigger := range []string{"state read", "admit"} {
		t.Run(trigger, func(t *testing.T) {
			clk, _, b := newBreaker(t, pol)
			trip(t, b)
			clk.Advance(hold)
			lost := mustAdmit(t, b)
			if !lost.Probe() {
				t.Fatal("first call after the hold is not a probe")
			}
			admittedAt := clk.Now()

			// Just before the lease ends: busy, with 1ns to go.
			clk.Advance(lease - 1)
			if _, d := b.Admit(); d.Reason != registry.RefusedProbeBusy || d.RetryAfter != 1 {
				t.Fatalf("Admit 1ns before expiry = %+v, want half_open_busy retry 1ns", d)
			}

			// At exactly the lease: the probe is counted as failed.
			clk.Advance(1)
			switch trigger {
			case "state read":
				if st := b.State(); st != open {
					t.Fatalf("State at lease expiry = %v, want open", st)
				}
			case "admit":
				_, d := b.Admit()
				if want := (registry.Decision{State: open, Reason: registry.RefusedOpen, RetryAfter: 2 * hold, At: clk.Now(), Cause: registry.CauseLeaseExpired}); d != want {
					t.Fatalf("Admit at lease expiry = %+v, want %+v", d, want)
				}
			}
			wantState(t, b, open, 2*hold)
			before := b.Counts()

			if lost.Done(success) {
				t.Error("late Done of the expired probe returned true")
			}
			if lost.Probe() {
				t.Error("expired ticket still reports Probe")
			}
			wantState(t, b, open, 2*hold)
			if after := b.Counts(); after != before {
				t.Errorf("late Done changed counts: %+v → %+v", before, after)
			}

			// The next probe comes exactly after the grown hold: never
			// refused for longer than lease + hold.
			clk.Advance(2*hold - 1)
			if _, d := b.Admit(); d.Allowed {
				t.Fatal("admitted before the hold ended")
			}
			clk.Advance(1)
			if got, limit := clk.Now().Sub(admittedAt), lease+2*hold; got != limit {
				t.Fatalf("next probe at +%v, want +%v", got, limit)
			}
			p := mustAdmit(t, b)
			if !p.Probe() {
				t.Fatal("call after the grown hold is not a probe")
			}
			p.Done(success)
			wantState(t, b, closed, 0)
		})
	}
}

// B3: a probe that hangs (its goroutine blocked, its context never
// cancelled) is handled like a lost one; when it finally returns, its
// report is refused and does not disturb the closed breaker.
func TestHangingProbe(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, OpenBackoff: 1, NoJitter: true, ProbeLease: 5 * time.Second}
	clk, _, b := newBreaker(t, pol)
	trip(t, b)
	clk.Advance(10 * time.Second)

	admitted, release := make(chan struct{}), make(chan struct{})
	reported := make(chan bool)
	go func() {
		tk, d := b.Admit()
		if !d.Allowed {
			t.Errorf("hanging call refused: %+v", d)
		}
		close(admitted)
		<-release // the dependency never answers
		reported <- tk.Done(failure)
	}()
	<-admitted

	clk.Advance(5 * time.Second)
	wantState(t, b, open, 10*time.Second)
	clk.Advance(10 * time.Second)
	mustAdmit(t, b).Done(success)
	wantState(t, b, closed, 0)

	close(release)
	if <-reported {
		t.Error("Done of the hung probe returned true after its lease expired")
	}
	wantState(t, b, closed, 0)
	if c := b.Counts(); c.Failures != 0 || c.Requests != 0 {
		t.Errorf("hung probe's failure was counted: %+v", c)
	}
}

// B4: only the first report of a ticket counts, whichever copy and however
// many goroutines report it.
func TestDoneIsIdempotent(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 1000, DisableFailureRate: true}
	for _, o := range []registry.Outcome{success, failure, excluded} {
		for _, n := range []int{0, 1, 2, 10} {
			t.Run(fmt.Sprintf("%v×%d×8", o, n), func(t *testing.T) {
				_, _, b := newBreaker(t, pol)
				tk := mustAdmit(t, b)
				var wins atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for range 8 {
					cp := tk // each goroutine reports its own copy
					wg.Go(func() {
						<-start
						for range n {
							if cp.Done(o) {
								wins.Add(1)
							}
						}
					})
				}
				close(start)
				wg.Wait()
				want := registry.Counts{Requests: 1}
				if n > 0 {
					switch o {
					case success:
						want.Successes = 1
					case failure:
						want.Failures, want.ConsecutiveFailures = 1, 1
					case excluded:
						want.Exclusions = 1
					}
				}
				if diff := cmp.Diff(want, b.Counts()); diff != "" {
					t.Errorf("counts (-want +got):\n%s", diff)
				}
				if w := wins.Load(); (n > 0 && w != 1) || (n == 0 && w != 0) {
					t.Errorf("%d reports returned true", w)
				}
			})
		}
	}
}

// B4, gobreaker hazard (b2): one probe reported successful twice must not
// close a breaker that needs two successes; an excluded probe reported twice
// must not free two slots.
func TestDoubleReportOfProbe(t *testing.T) {
	t.Run("success twice", func(t *testing.T) {
		clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true, HalfOpenProbes: 2})
		trip(t, b)
		clk.Advance(time.Second)
		p := mustAdmit(t, b)
		mustAdmit(t, b)
		for range 10 {
			p.Done(success)
		}
		if st := b.State(); st != halfOpen {
			t.Fatalf("one probe reported 10 times moved the breaker to %v", st)
		}
	})
	t.Run("excluded twice", func(t *testing.T) {
		clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true})
		trip(t, b)
		clk.Advance(time.Second)
		p := mustAdmit(t, b)
		p.Done(excluded)
		p.Done(excluded)
		admitted := 0
		for range 10 {
			if _, d := b.Admit(); d.Allowed {
				admitted++
			}
		}
		if admitted != 1 {
			t.Fatalf("after a doubly reported exclusion, %d of 10 calls were admitted, want 1", admitted)
		}
	})
}

// B4: with HalfOpenProbes=1, never more than one probe in flight over
// 10,000 trials in which 4 goroutines race to probe and report each probe
// as excluded from 2 copies at once.
func TestNeverTwoConcurrentProbes(t *testing.T) {
	trials := 10000
	if testing.Short() {
		trials = 1000
	}
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, NoJitter: true})
	var inflight atomic.Int32
	for range trials {
		b.Reset()
		trip(t, b)
		clk.Advance(time.Second)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				<-start
				for range 3 {
					tk, d := b.Admit()
					if !d.Allowed {
						continue
					}
					if n := inflight.Add(1); n > 1 {
						t.Errorf("%d probes in flight", n)
					}
					inflight.Add(-1)
					var rep sync.WaitGroup
					for range 2 {
						cp := tk
						rep.Go(func() { cp.Done(excluded) })
					}
					rep.Wait()
				}
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// A probe that fails re-opens the breaker; a caller racing to probe at that
// moment must be refused (the hold has not expired), never handed an
// unleased ticket of gobreaker's next half-open generation.
func TestNoAdmissionAfterProbeFails(t *testing.T) {
	trials := 10000
	if testing.Short() {
		trials = 1000
	}
	clk, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, OpenFor: time.Second, OpenBackoff: 1, NoJitter: true})
	for range trials {
		b.Reset()
		trip(t, b)
		clk.Advance(time.Second)
		start := make(chan struct{})
		var admitted atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				<-start
				for range 20 {
					tk, d := b.Admit()
					if !d.Allowed {
						continue
					}
					admitted.Add(1)
					if !tk.Probe() || d.State != halfOpen {
						t.Errorf("admitted a non-probe while not closed: %+v", d)
					}
					tk.Done(failure)
				}
			})
		}
		close(start)
		wg.Wait()
		// The clock never moved after the first probe: exactly one call
		// may have been admitted.
		if n := admitted.Load(); n != 1 {
			t.Fatalf("%d calls admitted in one hold; want 1", n)
		}
		if st := b.State(); st != open {
			t.Fatalf("state %v after the probe failed, want open", st)
		}
		if n := b.PendingProbes(); n != 0 {
			t.Fatalf("%d pending probes while open", n)
		}
	}
}

// B4: a stale copy of a ticket whose pooled record was reused for a new call
// never affects the new call.
func TestStaleTicketAfterReuse(t *testing.T) {
	_, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1000, DisableFailureRate: true})
	for range 100 {
		a := mustAdmit(t, b)
		if !a.Done(success) {
			t.Fatal("first Done returned false")
		}
		bt := mustAdmit(t, b) // likely the same pooled record as a
		before := b.Counts()
		if a.Done(failure) {
			t.Fatal("stale ticket reported again")
		}
		if after := b.Counts(); after != before {
			t.Fatalf("stale ticket changed counts: %+v → %+v", before, after)
		}
		if !bt.Done(excluded) {
			t.Fatal("the new ticket was consumed by a stale copy")
		}
	}
	if c := b.Counts(); c.Successes != 100 || c.Exclusions != 100 || c.Failures != 0 {
		t.Fatalf("counts = %+v, want 100 successes and 100 exclusions", c)
	}
}

// The zero Ticket (a refused call) reports nothing.
func TestZeroTicket(t *testing.T) {
	var tk registry.Ticket
	if tk.Valid() || tk.Probe() || tk.Done(failure) || tk.DoneWithRetryAfter(failure, time.Hour) {
		t.Fatal("zero ticket is live")
	}
	_, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1, NoJitter: true})
	trip(t, b)
	tk, d := b.Admit()
	if d.Allowed || tk.Valid() || tk.Done(success) {
		t.Fatalf("refused Admit returned a live ticket: %+v", d)
	}
	tk, err := b.Allow()
	if err == nil || tk.Valid() {
		t.Fatalf("refused Allow = %v, %v", tk, err)
	}
}

// B5: late results never move state. A ticket admitted while closed is
// reported after the breaker has moved on: no state, count or pending-probe
// change, for every outcome and every moment of arrival.
func TestLateResultsNeverMoveState(t *testing.T) {
	pol := registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true, OpenFor: 10 * time.Second, NoJitter: true, HalfOpenProbes: 2}
	arrivals := []struct {
		name  string
		setup func(t *testing.T, clk interface{ Advance(time.Duration) }, b *registry.Breaker)
		state registry.State
	}{
		{"open", func(t *testing.T, _ interface{ Advance(time.Duration) }, b *registry.Breaker) {
			trip(t, b)
		}, open},
		{"half_open with another probe", func(t *testing.T, clk interface{ Advance(time.Duration) }, b *registry.Breaker) {
			trip(t, b)
			clk.Advance(10 * time.Second)
			mustAdmit(t, b) // still out
		}, halfOpen},
		{"re-closed", func(t *testing.T, clk interface{ Advance(time.Duration) }, b *registry.Breaker) {
			trip(t, b)
			clk.Advance(10 * time.Second)
			p1, p2 := mustAdmit(t, b), mustAdmit(t, b)
			p1.Done(success)
			p2.Done(success)
			report(t, b, failure) // one failure: the next would trip
		}, closed},
	}
	for _, arr := range arrivals {
		for _, o := range []registry.Outcome{success, failure, excluded} {
			t.Run(fmt.Sprintf("%v/%v", arr.name, o), func(t *testing.T) {
				clk, r, b := newBreaker(t, pol)
				stale := []registry.Ticket{mustAdmit(t, b), mustAdmit(t, b)}
				arr.setup(t, clk, b)
				rec := record(t, r)
				before, pending, ra := b.Counts(), b.PendingProbes(), b.RetryAfter()
				for _, tk := range stale {
					tk.DoneWithRetryAfter(o, 0)
				}
				wantState(t, b, arr.state, ra)
				if after := b.Counts(); after != before {
					t.Errorf("counts changed: %+v → %+v", before, after)
				}
				if got := b.PendingProbes(); got != pending {
					t.Errorf("pending probes %d → %d", pending, got)
				}
				if got := rec.briefs(t); len(got) != 0 {
					t.Errorf("transitions: %v", got)
				}
			})
		}
	}
}

// Probe may be called on any copy while another copy reports the ticket and
// the pooled record is reused for a new call (run under -race).
func TestProbeWhileRecordIsReused(t *testing.T) {
	_, _, b := newBreaker(t, registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true})
	tickets := make(chan registry.Ticket, 64)
	var readers, workers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for tk := range tickets {
				for range 4 {
					if tk.Probe() {
						t.Error("an ordinary ticket reports Probe")
					}
				}
			}
		})
	}
	for range 4 {
		workers.Go(func() {
			for range 5000 {
				tk := mustAdmit(t, b)
				tickets <- tk
				tk.Done(success)
			}
		})
	}
	workers.Wait()
	close(tickets)
	readers.Wait()
}
