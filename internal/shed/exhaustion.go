package shed

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// FalseOpen is the chance, per call, that a partial rate-limit
// storm opens a model endpoint's breaker by accident: an endpoint that
// refuses (429) a share r of its calls, independently, is opened only by a
// streak of refusals that share would produce with a probability of at most
// this, i.e. at least ln(FalseOpen)/ln(r) refusals in a row, and
// never fewer than the policy's RetryHintFailures. See exhaustion.
const FalseOpen = 1e-6

// exhaustionBuckets is the resolution of the refusal history.
const exhaustionBuckets = 10

// The latest outcomes (before the current streak) give two recent refused
// shares, over exhaustionShort and over exhaustionRecent outcomes: a storm
// that has just started shows in the first at once, and in the second
// with less noise, while the window is still full of healthy calls.
const (
	exhaustionShort  = 8
	exhaustionRecent = 64
)

// Exhaustion tells a model endpoint that refuses (nearly) everything from
// one under a partial storm, from the rate-limit refusals and the other
// answers of the calls it was sent while its breaker was closed.
//
// A streak of refusals opens the breaker once it is unlikely under the
// share of refusals seen before it (the largest of the shares over the
// breaker's Window and over the latest 64 and 8 outcomes, so that a storm
// that has just begun counts at once): a healthy or a fresh endpoint opens on
// RetryHintFailures refusals in a row (5 in DefaultPolicy), while under a
// storm refusing a share r the streak must be as long as
// ln(FalseOpen)/ln(r) (6 at 10 %, 13 at a third, 20 at half).
// Counting consecutive refusals against a fixed threshold (3) opened the
// primary by chance every 27 calls under a storm refusing a third, for the
// whole retry hint: most users ended up on the fallback.
//
// The streak is not added to the history until it is broken by an accepted
// call (it was then part of the storm); a streak that opens the breaker is
// dropped, so an exhaustion that has passed does not make the next one
// harder to see.
type Exhaustion struct {
	bucket time.Duration
	window time.Duration
	min    int // RetryHintFailures
	// last is when the latest refusal was recorded (Unix nanoseconds; 0:
	// never). While no refusal is within the window, accepted calls are
	// not recorded (the hot path reads one atomic): the history then holds
	// only the time since refusals began, which if anything overstates the
	// refused share (a longer streak needed), and a streak older than the
	// window is forgotten at the next refusal.
	last atomic.Int64

	mu      sync.Mutex
	slot    [exhaustionBuckets]int64
	sent    [exhaustionBuckets]float64 // outcomes before the current streak
	refused [exhaustionBuckets]float64
	streak  int
	// recent holds the latest exhaustionRecent outcomes before the streak
	// (true: refused), a ring; recentN of them are held, recentRefused
	// refused.
	recent        [exhaustionRecent]bool
	recentAt      int
	recentN       int
	recentRefused int
}

func (e *Exhaustion) push(refused bool) {
	if e.recentN == exhaustionRecent {
		if e.recent[e.recentAt] {
			e.recentRefused--
		}
	} else {
		e.recentN++
	}
	e.recent[e.recentAt] = refused
	if refused {
		e.recentRefused++
	}
	e.recentAt = (e.recentAt + 1) % exhaustionRecent
}

func NewExhaustion(window time.Duration, minStreak int) *Exhaustion {
	if window <= 0 {
		window = time.Minute
	}
	e := &Exhaustion{bucket: max(window/exhaustionBuckets, time.Millisecond), window: window, min: max(minStreak, 1)}
	for i := range e.slot {
		e.slot[i] = math.MinInt64
	}
	return e
}

func (e *Exhaustion) cur(now time.Time) int {
	n := now.UnixNano() / int64(e.bucket)
	i := int(uint64(n) % exhaustionBuckets)
	if e.slot[i] != n {
		e.slot[i], e.sent[i], e.refused[i] = n, 0, 0
	}
	return i
}

// active reports whether a refusal was ever recorded: until then accepted
// calls need not be (see last).
func (e *Exhaustion) Active() bool { return e.last.Load() != 0 }

// accept records a sent call the endpoint did not refuse for its rate.
func (e *Exhaustion) Accept(now time.Time) {
	if last := e.last.Load(); last == 0 || now.UnixNano()-last > int64(e.window) {
		return
	}
	e.mu.Lock()
	i := e.cur(now)
	e.sent[i] += float64(e.streak) + 1
	e.refused[i] += float64(e.streak)
	for range min(e.streak, exhaustionRecent) {
		e.push(true)
	}
	e.push(false)
	e.streak = 0
	e.mu.Unlock()
}

// refuse records a rate-limit refusal and reports whether the streak it
// extends says the endpoint is exhausted (then the streak is dropped).
func (e *Exhaustion) Refuse(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if last := e.last.Load(); last != 0 && now.UnixNano()-last > int64(e.window) {
		e.streak = 0 // no refusal for a window: an old streak says nothing now
	}
	e.last.Store(max(now.UnixNano(), 1))
	e.streak++
	if e.streak < e.min {
		return false
	}
	if e.streak < e.needLocked(now) {
		return false
	}
	e.streak = 0
	return true
}

// needLocked is how many refusals in a row say "exhausted" now.
func (e *Exhaustion) needLocked(now time.Time) int {
	n := now.UnixNano() / int64(e.bucket)
	var sent, refused float64
	for i := range e.slot {
		if s := e.slot[i]; s > n-exhaustionBuckets && s <= n {
			sent += e.sent[i]
			refused += e.refused[i]
		}
	}
	short, shortRefused := 0, 0
	for j := 1; j <= min(exhaustionShort, e.recentN); j++ {
		short++
		if e.recent[(e.recentAt-j+exhaustionRecent)%exhaustionRecent] {
			shortRefused++
		}
	}
	r := max(refused/(sent+1), float64(e.recentRefused)/float64(e.recentN+1), float64(shortRefused)/float64(short+1))
	need := float64(e.min)
	if r > 0 {
		need = math.Ceil(math.Log(FalseOpen)/math.Log(r) - 1e-9)
	}
	if need > 1e6 {
		need = 1e6
	}
	return max(e.min, int(need))
}
