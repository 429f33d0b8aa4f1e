package degrade_test

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestLedgerHit(t *testing.T) {
	var l degrade.Ledger // the zero Ledger is usable
	steps := []struct {
		inv, dep           string
		wantDep, wantTotal int
	}{
		{"inv1", "search", 1, 1},
		{"inv1", "search", 2, 2},
		{"inv1", "weather", 1, 3},
		{"inv2", "search", 1, 1},
		{"inv1", "search", 3, 4},
	}
	for i, s := range steps {
		d, tot := l.Hit(s.inv, s.dep, t0)
		if d != s.wantDep || tot != s.wantTotal {
			t.Errorf("step %d: Hit(%s, %s) = %d, %d; want %d, %d", i, s.inv, s.dep, d, tot, s.wantDep, s.wantTotal)
		}
	}
	if l.Len() != 2 {
		t.Errorf("Len = %d, want 2", l.Len())
	}
	if got := l.Total("inv1"); got != 4 {
		t.Errorf("Total(inv1) = %d, want 4", got)
	}
	if got := l.Count("inv1", "weather"); got != 1 {
		t.Errorf("Count(inv1, weather) = %d, want 1", got)
	}
	if got := l.Count("inv1", "nothing"); got != 0 {
		t.Errorf("Count(inv1, nothing) = %d, want 0", got)
	}
	want := []degrade.DepCount{{"search", 3}, {"weather", 1}}
	if got := l.Counts("inv1"); !slices.Equal(got, want) {
		t.Errorf("Counts(inv1) = %v, want %v", got, want)
	}
	if got := l.Counts("absent"); got != nil {
		t.Errorf("Counts(absent) = %v, want nil", got)
	}

	l.Release("inv1")
	l.Release("inv1") // releasing twice is harmless
	l.Release("never")
	if l.Len() != 1 || l.Total("inv1") != 0 || l.Count("inv1", "search") != 0 {
		t.Errorf("after Release: Len %d, Total %d", l.Len(), l.Total("inv1"))
	}
	if d, tot := l.Hit("inv1", "search", t0); d != 1 || tot != 1 {
		t.Errorf("Hit after Release = %d, %d; want a fresh count", d, tot)
	}
}

func TestLedgerLazy(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{})
	_ = l.Total("a")
	_ = l.Count("a", "b")
	_ = l.Counts("a")
	_, _ = l.UsageOf("a")
	if l.Len() != 0 {
		t.Errorf("reads created entries: Len = %d", l.Len())
	}
}

// TestLedgerUsage: Begin dates the invocation, ModelCall counts model calls
// (not after End), and the usage carries the short-circuit total.
func TestLedgerUsage(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{})
	t0 := time.Unix(1_700_000_000, 0)
	l.Begin("inv", t0)
	l.Begin("inv", t0.Add(time.Hour)) // an existing entry keeps its date
	if u := l.ModelCall("inv", t0.Add(time.Second)); u.ModelCalls != 1 || !u.Started.Equal(t0) || u.Total != 0 || u.Ended {
		t.Fatalf("first ModelCall = %+v", u)
	}
	l.Hit("inv", "dep", t0.Add(2*time.Second))
	if u := l.ModelCall("inv", t0.Add(3*time.Second)); u.ModelCalls != 2 || u.Total != 1 {
		t.Fatalf("second ModelCall = %+v", u)
	}
	l.End("inv", t0.Add(4*time.Second))
	if u := l.ModelCall("inv", t0.Add(5*time.Second)); u.ModelCalls != 2 || !u.Ended {
		t.Fatalf("ModelCall after End = %+v, want not counted", u)
	}
	if u, ok := l.UsageOf("inv"); !ok || u.ModelCalls != 2 || u.Total != 1 || !u.Ended || !u.Started.Equal(t0) {
		t.Fatalf("UsageOf = %+v, %v", u, ok)
	}
	// Without Begin, the first model call dates the entry.
	if u := l.ModelCall("other", t0.Add(time.Minute)); !u.Started.Equal(t0.Add(time.Minute)) || u.ModelCalls != 1 {
		t.Fatalf("ModelCall without Begin = %+v", u)
	}
	l.Release("inv")
	l.Release("other")
	if l.Len() != 0 {
		t.Fatalf("Len after Release = %d", l.Len())
	}
}

// TestLedgerConcurrentExact hits one invocation and dependency from many
// goroutines at once, as parallel function calls of one model response do.
// Every Hit must return a distinct count, and the totals must be exact.
func TestLedgerConcurrentExact(t *testing.T) {
	for _, goroutines := range []int{8, 64} {
		t.Run(fmt.Sprint(goroutines), func(t *testing.T) {
			const hits = 1000
			l := degrade.NewLedger(degrade.LedgerOptions{})
			seen := make([][]int, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for range hits {
						d, _ := l.Hit("inv", "search", t0)
						seen[g] = append(seen[g], d)
						l.Hit("inv", fmt.Sprint("dep", g%4), t0)
						l.Hit(fmt.Sprint("other", g), "search", t0)
					}
				})
			}
			wg.Wait()
			n := goroutines * hits
			if got := l.Count("inv", "search"); got != n {
				t.Errorf("Count = %d, want %d", got, n)
			}
			if got := l.Total("inv"); got != 2*n {
				t.Errorf("Total = %d, want %d", got, 2*n)
			}
			all := slices.Concat(seen...)
			slices.Sort(all)
			for i, d := range all {
				if d != i+1 {
					t.Fatalf("returned counts are not 1..%d: position %d holds %d", n, i, d)
				}
			}
			if got := l.Len(); got != 1+goroutines {
				t.Errorf("Len = %d, want %d", got, 1+goroutines)
			}
		})
	}
}

func TestLedgerEvictsOldestWhenFull(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{MaxInvocations: 3, MaxAge: time.Hour})
	l.Hit("a", "d", t0)
	l.Hit("b", "d", t0.Add(time.Second))
	l.Hit("c", "d", t0.Add(2*time.Second))
	l.Hit("a", "d", t0.Add(3*time.Second)) // existing entry: no room needed
	if l.Len() != 3 || l.Evictions() != 0 {
		t.Fatalf("Len %d, Evictions %d; want 3, 0", l.Len(), l.Evictions())
	}
	l.Hit("d", "d", t0.Add(4*time.Second))
	if l.Len() != 3 || l.Evictions() != 1 {
		t.Errorf("Len %d, Evictions %d; want 3, 1", l.Len(), l.Evictions())
	}
	if l.Total("a") != 0 || l.Total("b") != 1 || l.Total("d") != 1 {
		t.Errorf("the oldest entry (a) should be gone: a %d, b %d, d %d", l.Total("a"), l.Total("b"), l.Total("d"))
	}
}

func TestLedgerSweepsBeforeEvicting(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{MaxInvocations: 3, MaxAge: time.Minute})
	l.Hit("old1", "d", t0)
	l.Hit("old2", "d", t0.Add(time.Second))
	l.Hit("new", "d", t0.Add(2*time.Minute))
	l.Hit("newer", "d", t0.Add(2*time.Minute+time.Second))
	if l.Evictions() != 0 {
		t.Errorf("Evictions = %d, want 0: stale entries should have been swept", l.Evictions())
	}
	if l.Len() != 2 || l.Total("old1") != 0 || l.Total("old2") != 0 || l.Total("new") != 1 {
		t.Errorf("Len %d; old1 %d old2 %d new %d", l.Len(), l.Total("old1"), l.Total("old2"), l.Total("new"))
	}
}

func TestLedgerSweep(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{MaxAge: 10 * time.Minute})
	for i := range 100 {
		l.Hit(fmt.Sprint("inv", i), "d", t0.Add(time.Duration(i)*time.Minute))
	}
	if n := l.Sweep(t0.Add(10 * time.Minute)); n != 0 {
		t.Errorf("Sweep at the boundary removed %d, want 0", n)
	}
	// Entries created before t0+50m-10m = t0+40m: inv0..inv39.
	if n := l.Sweep(t0.Add(50 * time.Minute)); n != 40 {
		t.Errorf("Sweep removed %d, want 40", n)
	}
	if l.Len() != 60 || l.Total("inv39") != 0 || l.Total("inv40") != 1 {
		t.Errorf("Len %d, inv39 %d, inv40 %d", l.Len(), l.Total("inv39"), l.Total("inv40"))
	}
	if l.Evictions() != 0 {
		t.Errorf("Sweep counted as eviction")
	}
	if n := l.Sweep(t0.Add(24 * time.Hour)); n != 60 || l.Len() != 0 {
		t.Errorf("final Sweep removed %d, Len %d", n, l.Len())
	}
}

func TestLedgerDefaults(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{MaxInvocations: -1, MaxAge: -1})
	l.Hit("a", "d", t0)
	if n := l.Sweep(t0.Add(degrade.DefaultMaxAge)); n != 0 {
		t.Errorf("swept at exactly DefaultMaxAge: %d", n)
	}
	if n := l.Sweep(t0.Add(degrade.DefaultMaxAge + 1)); n != 1 {
		t.Errorf("not swept after DefaultMaxAge: %d", n)
	}
	for i := range degrade.DefaultMaxInvocations + 10 {
		l.Hit(fmt.Sprint(i), "d", t0.Add(time.Duration(i)))
	}
	if l.Len() != degrade.DefaultMaxInvocations || l.Evictions() != 10 {
		t.Errorf("Len %d, Evictions %d; want %d, 10", l.Len(), l.Evictions(), degrade.DefaultMaxInvocations)
	}
}

// TestLedgerCapUnderConcurrency creates many invocations at once against a
// small cap: Len must end at the cap and every removal be accounted for.
func TestLedgerCapUnderConcurrency(t *testing.T) {
	const limit, goroutines, perG = 50, 16, 200
	l := degrade.NewLedger(degrade.LedgerOptions{MaxInvocations: limit})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				l.Hit(fmt.Sprint(g, "-", i), "d", t0.Add(time.Duration(i)))
				if l.Len() > limit+goroutines {
					t.Errorf("Len %d far over the cap", l.Len())
					return
				}
			}
		})
	}
	wg.Wait()
	if l.Len() != limit {
		t.Errorf("Len = %d, want %d", l.Len(), limit)
	}
	if got, want := l.Evictions(), uint64(goroutines*perG-limit); got != want {
		t.Errorf("Evictions = %d, want %d", got, want)
	}
}

func TestLedgerHotPathAllocs(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{})
	l.Hit("inv-1234", "search", t0)
	l.Hit("inv-1234", "weather", t0)
	if n := testing.AllocsPerRun(1000, func() { l.Hit("inv-1234", "weather", t0) }); n != 0 {
		t.Errorf("Hit on an existing invocation and dependency: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = l.Total("absent") }); n != 0 {
		t.Errorf("Total of an absent invocation: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = l.Count("inv-1234", "search") }); n != 0 {
		t.Errorf("Count: %v allocs, want 0", n)
	}
}

func BenchmarkLedgerHit(b *testing.B) {
	b.Run("existing", func(b *testing.B) {
		l := degrade.NewLedger(degrade.LedgerOptions{})
		l.Hit("inv-1234", "search", t0)
		b.ReportAllocs()
		for b.Loop() {
			l.Hit("inv-1234", "search", t0)
		}
	})
	b.Run("same_inv_parallel", func(b *testing.B) {
		l := degrade.NewLedger(degrade.LedgerOptions{})
		l.Hit("inv-1234", "search", t0)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Hit("inv-1234", "search", t0)
			}
		})
	})
	b.Run("distinct_inv_parallel", func(b *testing.B) {
		l := degrade.NewLedger(degrade.LedgerOptions{})
		invs := make([]string, 256)
		for i := range invs {
			invs[i] = fmt.Sprint("inv-", i)
			l.Hit(invs[i], "search", t0)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				l.Hit(invs[i&255], "search", t0)
				i += 7
			}
		})
	})
	b.Run("new_invocation", func(b *testing.B) {
		l := degrade.NewLedger(degrade.LedgerOptions{})
		invs := make([]string, 1024)
		for i := range invs {
			invs[i] = fmt.Sprint("inv-", i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			inv := invs[i&1023]
			l.Hit(inv, "search", t0)
			l.Release(inv)
		}
	})
}

// TestLedgerAddTokens: tokens and marks add up per invocation, a negative
// count adds nothing, the sum saturates instead of wrapping, tokens spent
// after End still count, and Release drops them with the rest.
func TestLedgerAddTokens(t *testing.T) {
	l := degrade.NewLedger(degrade.LedgerOptions{})
	now := time.Unix(1_700_000_000, 0)
	l.AddTokens("inv", 1000, 1, now)
	l.AddTokens("inv", -5, 0, now)
	l.End("inv", now)
	u := l.AddTokens("inv", 500, 4, now)
	if u.Tokens != 1500 || u.Marks != 5 || !u.Ended {
		t.Fatalf("usage = %+v, want 1500 tokens, marks 5, ended", u)
	}
	if u := l.AddTokens("inv", math.MaxInt64, 0, now); u.Tokens != math.MaxInt64 {
		t.Fatalf("tokens = %d, want saturated at MaxInt64", u.Tokens)
	}
	if u, _ := l.UsageOf("other"); u.Tokens != 0 {
		t.Fatalf("another invocation has %d tokens", u.Tokens)
	}
	l.Release("inv")
	if _, ok := l.UsageOf("inv"); ok || l.Len() != 0 {
		t.Fatalf("entry left after Release: len %d", l.Len())
	}
}
