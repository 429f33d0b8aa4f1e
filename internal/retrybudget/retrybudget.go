// Package retrybudget bounds retries: a Finagle-style budget of retries
// per operations over a sliding window, and full-jitter exponential backoff.
// It names no ADK or MCP type; mcpguard retries MCP operations with it.
package retrybudget

import (
	"sync"
	"time"
)

// Budget caps retries to a fraction of operations over a sliding
// window (Finagle-style): a retry is allowed while retries in the window are
// below min + ratio·operations. It is safe for concurrent use.
type Budget struct {
	ratio  float64
	min    int
	bucket time.Duration

	mu    sync.Mutex
	slots [10]budgetSlot // Guarded by mu.
}

type budgetSlot struct {
	epoch        int64
	ops, retries int
}

// New returns a budget of min + ratio·operations retries over window.
func New(ratio float64, min int, window time.Duration) *Budget {
	return &Budget{ratio: ratio, min: min, bucket: max(window/10, time.Millisecond)}
}

func (b *Budget) slotLocked(now time.Time) *budgetSlot {
	e := now.UnixNano() / int64(b.bucket)
	s := &b.slots[e%int64(len(b.slots))]
	if s.epoch != e {
		*s = budgetSlot{epoch: e}
	}
	return s
}

func (b *Budget) sumLocked(now time.Time) (ops, retries int) {
	e := now.UnixNano() / int64(b.bucket)
	for i := range b.slots {
		if s := &b.slots[i]; s.epoch > e-int64(len(b.slots)) && s.epoch <= e {
			ops += s.ops
			retries += s.retries
		}
	}
	return ops, retries
}

// Operation records one operation.
func (b *Budget) Operation(now time.Time) {
	b.mu.Lock()
	b.slotLocked(now).ops++
	b.mu.Unlock()
}

// TryRetry takes a retry from the budget, or reports false.
func (b *Budget) TryRetry(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ops, retries := b.sumLocked(now)
	if float64(retries) >= float64(b.min)+b.ratio*float64(ops) {
		return false
	}
	b.slotLocked(now).retries++
	return true
}

// Backoff returns the full-jitter delay of retry n (from 0): u·min(cap, base·2ⁿ)
// for u in [0, 1).
func Backoff(base, cap time.Duration, n int, u float64) time.Duration {
	ceil := cap
	if n < 62 {
		if c := base << n; c > 0 && c < cap && c>>n == base {
			ceil = c
		}
	}
	return time.Duration(u * float64(ceil))
}
