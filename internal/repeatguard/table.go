package repeatguard

import (
	"sync"
	"sync/atomic"
	"time"
)

// repeatTurns counts the calls of each root turn by the hash of (branch,
// tool, canonical arguments), in a map per turn: one turn's counts are
// never overwritten by another turn's calls, whatever the traffic. A turn's
// map is created by its first counted call, holds at most MaxCalls
// distinct calls, and is released by the root run's AfterRun. Only when
// max turns are held at once does a new turn make room: turns older than
// maxAge (whose AfterRun never fired) go first, else the oldest. The guard
// errs by missing a loop, never by stopping a call that differs; another
// turn's traffic cannot make it forget a loop unless max turns run at once.
type Turns struct {
	n      atomic.Int64 // turns held (for Pending)
	mu     sync.Mutex
	m      map[string]*turn
	max    int
	maxAge time.Duration
}

type turn struct {
	counts map[uint64]uint16
	at     time.Time
}

// MaxCalls bounds the distinct calls counted in one turn: a turn that
// lists more is not looping on one call; calls past the bound are not
// counted (about 40 bytes each: at most about 160 KiB per turn).
const MaxCalls = 4096

const (
	CountBits = 16
	CountMask = 1<<CountBits - 1
)

func NewTurns(max int, maxAge time.Duration) *Turns {
	return &Turns{m: map[string]*turn{}, max: max, maxAge: maxAge}
}

// add counts one call with hash h in turn inv and returns how many calls
// with that hash the turn made, this one included (1 when it cannot be
// counted).
func (r *Turns) Add(inv string, h uint64, now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.m[inv]
	if t == nil {
		if len(r.m) >= r.max {
			r.makeRoomLocked(now)
		}
		t = &turn{counts: map[uint64]uint16{}, at: now}
		r.m[inv] = t
		r.n.Add(1)
	}
	c, ok := t.counts[h]
	if !ok && len(t.counts) >= MaxCalls {
		return 1
	}
	if c < CountMask {
		c++
	}
	t.counts[h] = c
	return int(c)
}

// uncount takes one call with hash h back out of turn inv's count: a call
// the breaker refused or counted as a failure is the breaker's business
// (its retries reach the breaker's threshold), not a repeat of an answer.
func (r *Turns) Uncount(inv string, h uint64) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.m[inv]; t != nil {
		switch c := t.counts[h]; {
		case c > 1:
			t.counts[h] = c - 1
		case c == 1:
			delete(t.counts, h)
		}
	}
}

// release drops turn inv's counts (the root run's AfterRun).
func (r *Turns) Release(inv string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	if _, ok := r.m[inv]; ok {
		delete(r.m, inv)
		r.n.Add(-1)
	}
	r.mu.Unlock()
}

// makeRoomLocked drops the turns older than maxAge (runs whose AfterRun
// never fired: callbacks wired into an agent by hand have none), and when
// none is, the oldest turn. Callers hold r.mu.
func (r *Turns) makeRoomLocked(now time.Time) {
	var oldest string
	var at time.Time
	for inv, t := range r.m {
		if now.Sub(t.at) >= r.maxAge {
			delete(r.m, inv)
			r.n.Add(-1)
			continue
		}
		if oldest == "" || t.at.Before(at) {
			oldest, at = inv, t.at
		}
	}
	if len(r.m) >= r.max && oldest != "" {
		delete(r.m, oldest)
		r.n.Add(-1)
	}
}

func (r *Turns) Len() int {
	if r == nil {
		return 0
	}
	return int(r.n.Load())
}

// RunKey names one run's marks and end: its invocation ID and its branch
// (the sub-agents of a ParallelAgent share their invocation ID, and each
// runs its own loop).
type RunKey struct{ Run, Branch string }

// Marks holds, per run (invocation and branch), the calls its model
// responses listed that were not the first of their kind in the turn, with
// their counts in the order the model listed them, until BeforeTool meets
// them, the run's next model response drops them, or AfterRun releases
// them (a listed call that never ran: a plugin before this one answered
// it, or the tool was not found).
type Marks struct {
	n  atomic.Int64 // marks held: BeforeTool looks only when there are any
	mu sync.Mutex
	m  map[RunKey]map[uint64][]int
}

func (r *Marks) Put(run RunKey, h uint64, count int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[RunKey]map[uint64][]int{}
	}
	byHash := r.m[run]
	if byHash == nil {
		byHash = map[uint64][]int{}
		r.m[run] = byHash
	}
	byHash[h] = append(byHash[h], count)
	r.n.Add(1)
}

// take pops the first mark of call h in run.
func (r *Marks) Take(run RunKey, h uint64) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := r.m[run][h]
	if len(counts) == 0 {
		return 0, false
	}
	n := counts[0]
	if len(counts) == 1 {
		delete(r.m[run], h)
		if len(r.m[run]) == 0 {
			delete(r.m, run)
		}
	} else {
		r.m[run][h] = counts[1:]
	}
	r.n.Add(-1)
	return n, true
}

// release drops the marks of run (one branch of an invocation).
func (r *Marks) Release(run RunKey) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, counts := range r.m[run] {
		r.n.Add(-int64(len(counts)))
	}
	delete(r.m, run)
}

// releaseRun drops the marks of every branch of invocation inv (its
// AfterRun).
func (r *Marks) ReleaseRun(inv string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, byHash := range r.m {
		if k.Run != inv {
			continue
		}
		for _, counts := range byHash {
			r.n.Add(-int64(len(counts)))
		}
		delete(r.m, k)
	}
}

// runs is how many runs hold marks (for Pending).
func (r *Marks) Runs() int {
	if r.n.Load() == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// Any reports whether any mark is held: the tool path reads only this
// (one atomic load) while nothing is marked.
func (r *Marks) Any() bool { return r.n.Load() != 0 }
