package loglimit_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/loglimit"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestBurstPerPeriod: burst lines per key per period, the rest counted and
// reported by the first line of the next window; keys are independent.
func TestBurstPerPeriod(t *testing.T) {
	l := loglimit.New(time.Minute, 2)
	var written []int
	for i := range 10 {
		if ok, _ := l.Allow("flappy", t0.Add(time.Duration(i)*time.Second)); ok {
			written = append(written, i)
		}
	}
	if fmt.Sprint(written) != "[0 1]" {
		t.Errorf("written %v, want the first 2", written)
	}
	if ok, _ := l.Allow("steady", t0.Add(5*time.Second)); !ok {
		t.Error("another key was limited")
	}
	ok, suppressed := l.Allow("flappy", t0.Add(time.Minute))
	if !ok || suppressed != 8 {
		t.Errorf("first line of the next window: ok=%v suppressed=%d, want true 8", ok, suppressed)
	}
	if _, s := l.Allow("flappy", t0.Add(time.Minute+time.Second)); s != 0 {
		t.Errorf("suppressed reported twice (%d)", s)
	}
}

// TestClockStepsBack: a clock that steps back starts a new window instead of
// silencing the key until the clock catches up.
func TestClockStepsBack(t *testing.T) {
	l := loglimit.New(time.Minute, 1)
	l.Allow("k", t0)
	l.Allow("k", t0.Add(time.Second))
	if ok, s := l.Allow("k", t0.Add(-time.Hour)); !ok || s != 1 {
		t.Errorf("after the clock stepped back: ok=%v suppressed=%d, want true 1", ok, s)
	}
}

// TestUnlimitedAndBounded: a negative period allows everything; many keys
// from many goroutines clear the table (bounds_test.go checks its size)
// rather than limit a key forever.
func TestUnlimitedAndBounded(t *testing.T) {
	u := loglimit.New(-1, 1)
	for range 3 {
		if ok, _ := u.Allow("k", t0); !ok {
			t.Fatal("unlimited limiter refused a line")
		}
	}
	l := loglimit.New(time.Hour, 1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3 * loglimit.MaxKeys {
				l.Allow(fmt.Sprintf("%d-%d", g, i), t0)
			}
		})
	}
	wg.Wait()
	// A key forgotten when the table was cleared is allowed again: memory,
	// not correctness, is what the bound trades.
	if ok, _ := l.Allow("0-0", t0); !ok {
		t.Error("a key from before the last clear is still limited")
	}
}

func ExampleLimiter() {
	l := loglimit.New(time.Minute, 1)
	for i := range 5 {
		if ok, suppressed := l.Allow("billing-api", t0.Add(time.Duration(i)*20*time.Second)); ok {
			fmt.Printf("line at %ds (suppressed %d)\n", i*20, suppressed)
		}
	}
	// Output:
	// line at 0s (suppressed 0)
	// line at 60s (suppressed 2)
}
