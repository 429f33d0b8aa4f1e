package shed

import (
	"math/rand/v2"
	"testing"
	"time"
)

// How many refusals in a row open an endpoint: RetryHintFailures with a
// healthy or no history, more after a storm (the streak must be unlikely
// under the refused share seen before it).
func TestExhaustionStreakFollowsTheHistory(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	streak := func(e *Exhaustion, now time.Time) int {
		for n := 1; n <= 100; n++ {
			if e.Refuse(now) {
				return n
			}
		}
		return 0
	}
	if n := streak(NewExhaustion(5*time.Minute, 5), start); n != 5 {
		t.Errorf("fresh: opens on refusal %d, want 5", n)
	}
	for _, tc := range []struct {
		share float64
		want  int
	}{{0, 5}, {0.1, 6}, {1.0 / 3, 13}, {0.5, 20}} {
		e := NewExhaustion(5*time.Minute, 5)
		now := start
		// A history with exactly the share refused, never 5 in a row.
		refused := 0.0
		for i := range 3000 {
			now = now.Add(time.Second / 30)
			if float64(refused) < tc.share*float64(i+1) && e.streak < 2 {
				refused++
				if e.Refuse(now) {
					t.Fatalf("share %.2f: opened during the history", tc.share)
				}
				continue
			}
			e.Accept(now)
		}
		if n := streak(e, now); n != tc.want {
			t.Errorf("after a history refusing %.0f%%: opens on refusal %d in a row, want %d", 100*tc.share, n, tc.want)
		}
	}
}

// Under storms refusing a share of the calls independently, starting after
// healthy traffic, the primary opens by chance only at the storm's very
// start (five refusals in a row before any accepted call: once in 16 at
// half), almost never later. Counting three in a row opened it within
// seconds.
func TestExhaustionRarelyOpensUnderAPartialStorm(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		share         float64
		onset, steady int // at most, of 200 storms
	}{{0.1, 2, 2}, {1.0 / 3, 8, 4}, {0.5, 30, 6}} {
		onset, steady := 0, 0
		for seed := range 200 {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(100*tc.share)))
			e := NewExhaustion(5*time.Minute, 5)
			now := start
			for range 900 { // 30 s healthy
				now = now.Add(time.Second / 30)
				e.Accept(now)
			}
			for i := range 5400 { // 3 min of storm
				now = now.Add(time.Second / 30)
				if rng.Float64() >= tc.share {
					e.Accept(now)
				} else if e.Refuse(now) {
					if i < 30 {
						onset++
					} else {
						steady++
					}
					break
				}
			}
		}
		t.Logf("storm refusing %.0f%%: of 200, %d opened in the first second, %d later", 100*tc.share, onset, steady)
		if onset > tc.onset || steady > tc.steady {
			t.Errorf("storm refusing %.0f%%: %d opened in the first second (want ≤ %d), %d later (want ≤ %d)", 100*tc.share, onset, tc.onset, steady, tc.steady)
		}
	}
}
