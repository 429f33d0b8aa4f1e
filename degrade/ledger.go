package degrade

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger defaults, used when a LedgerOptions field is zero or negative.
const (
	DefaultMaxInvocations = 10000
	DefaultMaxAge         = time.Hour
)

// numShards is the number of independently locked parts of a Ledger.
const numShards = 32

// ledgerSeed hashes invocation IDs to shards. One seed for the process is
// enough: it only spreads load, and it lets the zero Ledger work.
var ledgerSeed = maphash.MakeSeed()

// LedgerOptions configures a Ledger. A zero LedgerOptions consists entirely
// of defaults.
type LedgerOptions struct {
	// MaxInvocations caps the invocations tracked at once. When a new
	// invocation arrives at the cap, entries older than MaxAge are swept
	// and, if none was, the oldest entry is evicted. If 0 or less,
	// DefaultMaxInvocations.
	MaxInvocations int
	// MaxAge is the longest an invocation is expected to live. Older entries
	// are removed by Sweep, and first when room is needed. It is a backstop
	// for invocations whose end is never reported to Release. If 0 or less,
	// DefaultMaxAge.
	MaxAge time.Duration
}

// DepCount is the short-circuit count of one dependency in one invocation.
type DepCount struct {
	Dependency string // as passed to Hit
	Count      int    // short-circuits counted, at least 1
}

// Ledger counts short-circuits per invocation and per dependency, so that
// guidance can turn terminal and an invocation can be stopped when its
// budget is spent. An invocation gets an entry on its first Hit, not
// before, and loses it on Release, Sweep or eviction.
//
// A Ledger is safe for concurrent use: the parallel tool calls of one
// invocation may Hit it from separate goroutines and every hit is counted
// exactly once. A Hit that races with the Release or eviction of its own
// invocation is counted against the entry being removed.
//
// The zero Ledger is ready to use with default options. A Ledger must not
// be copied after first use.
type Ledger struct {
	opts      LedgerOptions
	n         atomic.Int64  // entries, plus creations in progress
	evictions atomic.Uint64 // entries removed to make room
	shards    [numShards]ledgerShard
}

// ledgerShard is one lock's worth of a Ledger.
type ledgerShard struct {
	mu sync.Mutex
	m  map[string]*invEntry // guarded by mu
	_  [48]byte             // keep shards on separate cache lines
}

// invEntry holds the counts of one invocation. Its fields are guarded by the
// mutex of the shard holding it, so one lock covers lookup and update.
type invEntry struct {
	created time.Time  // immutable
	total   int        // guarded by the shard's mu
	ended   bool       // guarded by the shard's mu; see End
	calls   int        // guarded by the shard's mu; model calls, see ModelCall
	tokens  int64      // guarded by the shard's mu; see AddTokens
	marks   uint32     // guarded by the shard's mu; see AddTokens
	deps    []DepCount // guarded by the shard's mu; few, so searched linearly
}

// NewLedger returns an empty Ledger with the given options.
func NewLedger(o LedgerOptions) *Ledger {
	return &Ledger{opts: o}
}

func (l *Ledger) maxInvocations() int64 {
	if l.opts.MaxInvocations <= 0 {
		return DefaultMaxInvocations
	}
	return int64(l.opts.MaxInvocations)
}

func (l *Ledger) maxAge() time.Duration {
	if l.opts.MaxAge <= 0 {
		return DefaultMaxAge
	}
	return l.opts.MaxAge
}

func (l *Ledger) shard(inv string) *ledgerShard {
	return &l.shards[maphash.String(ledgerSeed, inv)%numShards]
}

// locked returns inv's shard, locked, and inv's entry in it (nil if none).
// The caller unlocks the shard.
func (l *Ledger) locked(inv string) (*ledgerShard, *invEntry) {
	s := l.shard(inv)
	s.mu.Lock()
	return s, s.m[inv]
}

// lockedOrCreate is locked, creating inv's entry (dated now) if it has none.
// An entry evicted between its creation and the lock is still the one
// returned (its counts are then lost with it), so each call creates at most
// one entry.
func (l *Ledger) lockedOrCreate(inv string, now time.Time) (*ledgerShard, *invEntry) {
	s, e := l.locked(inv)
	if e != nil {
		return s, e
	}
	s.mu.Unlock()
	e = l.create(inv, now) // makes room first if full
	s.mu.Lock()
	return s, e
}

// Hit counts one short-circuit of dep in invocation inv at time now, and
// returns the new count for dep in inv and the new total for inv. The first
// Hit of an invocation creates its entry, dated now, making room first if
// the Ledger is full. Once an invocation has hit a dependency, further hits
// of it take one lock and do not allocate.
func (l *Ledger) Hit(inv, dep string, now time.Time) (thisDep, total int) {
	s, e := l.lockedOrCreate(inv, now)
	defer s.mu.Unlock()
	e.total++
	for i := range e.deps {
		if e.deps[i].Dependency == dep {
			e.deps[i].Count++
			return e.deps[i].Count, e.total
		}
	}
	e.deps = append(e.deps, DepCount{Dependency: dep, Count: 1})
	return 1, e.total
}

// create returns the entry of inv, creating it if no other goroutine did
// first. It reserves a place in l.n before inserting, so that Len never
// exceeds the cap for long.
func (l *Ledger) create(inv string, now time.Time) *invEntry {
	limit := l.maxInvocations()
	for {
		n := l.n.Load()
		if n >= limit {
			l.makeRoom(now)
			continue
		}
		if l.n.CompareAndSwap(n, n+1) {
			break
		}
	}
	s := l.shard(inv)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[inv]; e != nil { // created concurrently: give the place back
		l.n.Add(-1)
		return e
	}
	if s.m == nil {
		s.m = make(map[string]*invEntry)
	}
	e := &invEntry{created: now}
	s.m[inv] = e
	return e
}

// makeRoom removes the entries older than MaxAge or, if there are none, the
// oldest entry. It scans every shard, one lock at a time, so it costs time
// linear in Len; it runs only when the Ledger is full.
func (l *Ledger) makeRoom(now time.Time) {
	if l.Sweep(now) > 0 {
		return
	}
	var (
		oldest      *invEntry
		oldestInv   string
		oldestShard *ledgerShard
	)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for inv, e := range s.m {
			if oldest == nil || e.created.Before(oldest.created) {
				oldest, oldestInv, oldestShard = e, inv, s
			}
		}
		s.mu.Unlock()
	}
	if oldest == nil {
		return // every place is reserved by a creation in progress
	}
	oldestShard.mu.Lock()
	if oldestShard.m[oldestInv] == oldest {
		delete(oldestShard.m, oldestInv)
		l.n.Add(-1)
		l.evictions.Add(1)
	}
	oldestShard.mu.Unlock()
}

// Total returns the number of short-circuits counted for inv, across all
// dependencies; 0 if inv has no entry.
func (l *Ledger) Total(inv string) int {
	total, _ := l.State(inv)
	return total
}

// End marks inv's turn as ended (the caller answered in place of the model),
// creating its entry if needed. It does not change the counts.
func (l *Ledger) End(inv string, now time.Time) {
	s, e := l.lockedOrCreate(inv, now)
	e.ended = true
	s.mu.Unlock()
}

// State returns inv's total and whether End was called for it, in one
// lookup; (0, false) when inv has no entry. It does not allocate.
func (l *Ledger) State(inv string) (total int, ended bool) {
	s, e := l.locked(inv)
	defer s.mu.Unlock()
	if e == nil {
		return 0, false
	}
	return e.total, e.ended
}

// Usage is an invocation's accounting, as ModelCall and UsageOf report it.
type Usage struct {
	// Started is when the invocation's entry was created: by Begin at the
	// start of the run, or else by its first ModelCall, Hit or End.
	Started time.Time
	// ModelCalls is the number of model calls counted by ModelCall.
	ModelCalls int
	// Total is the number of short-circuits counted by Hit.
	Total int
	// Ended reports whether End was called.
	Ended bool
	// Tokens is the sum of the tokens counted by AddTokens.
	Tokens int64
	// Marks is the union of the marks set by AddTokens (the caller's bits).
	Marks uint32
}

// Begin creates inv's entry, dated now, if it has none, so that the
// invocation's Usage.Started is the start of its run. It does not change
// the counts.
func (l *Ledger) Begin(inv string, now time.Time) {
	s, _ := l.lockedOrCreate(inv, now)
	s.mu.Unlock()
}

// ModelCall counts one model call of inv, creating its entry dated now if
// it has none, and returns inv's usage including this call. A call made
// after End is not counted.
func (l *Ledger) ModelCall(inv string, now time.Time) Usage {
	s, e := l.lockedOrCreate(inv, now)
	defer s.mu.Unlock()
	if !e.ended {
		e.calls++
	}
	return e.usage()
}

func (e *invEntry) usage() Usage {
	return Usage{Started: e.created, ModelCalls: e.calls, Total: e.total, Ended: e.ended, Tokens: e.tokens, Marks: e.marks}
}

// AddTokens adds n tokens (negative n counts 0) and the caller's marks to
// inv, creating its entry dated now if it has none, and returns inv's usage
// including them. Tokens are counted after End too: they were spent.
func (l *Ledger) AddTokens(inv string, n int64, marks uint32, now time.Time) Usage {
	s, e := l.lockedOrCreate(inv, now)
	defer s.mu.Unlock()
	if n > 0 {
		e.tokens += min(n, math.MaxInt64-e.tokens) // saturates
	}
	e.marks |= marks
	return e.usage()
}

// UsageOf returns inv's usage and whether inv has an entry. It does not
// allocate.
func (l *Ledger) UsageOf(inv string) (Usage, bool) {
	s, e := l.locked(inv)
	defer s.mu.Unlock()
	if e == nil {
		return Usage{}, false
	}
	return e.usage(), true
}

// Count returns the number of short-circuits of dep counted for inv.
func (l *Ledger) Count(inv, dep string) int {
	s, e := l.locked(inv)
	defer s.mu.Unlock()
	if e == nil {
		return 0
	}
	for _, d := range e.deps {
		if d.Dependency == dep {
			return d.Count
		}
	}
	return 0
}

// Counts returns the per-dependency counts of inv sorted by dependency, or
// nil if inv has no entry. The caller owns the slice.
func (l *Ledger) Counts(inv string) []DepCount {
	s, e := l.locked(inv)
	if e == nil {
		s.mu.Unlock()
		return nil
	}
	out := slices.Clone(e.deps)
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b DepCount) int { return cmp.Compare(a.Dependency, b.Dependency) })
	return out
}

// Release removes the entry of inv, if any. Call it when the invocation
// ends.
func (l *Ledger) Release(inv string) {
	s := l.shard(inv)
	s.mu.Lock()
	if _, ok := s.m[inv]; ok {
		delete(s.m, inv)
		l.n.Add(-1)
	}
	s.mu.Unlock()
}

// Sweep removes the entries created before now minus MaxAge and returns how
// many it removed. Sweeps are not counted as evictions.
func (l *Ledger) Sweep(now time.Time) int {
	cutoff := now.Add(-l.maxAge())
	removed := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for inv, e := range s.m {
			if e.created.Before(cutoff) {
				delete(s.m, inv)
				removed++
			}
		}
		s.mu.Unlock()
	}
	l.n.Add(int64(-removed))
	return removed
}

// Len returns the number of invocations tracked. It is one atomic load,
// and may briefly count an entry whose creation is in progress.
func (l *Ledger) Len() int {
	return int(l.n.Load())
}

// Evictions returns the number of entries removed, since the Ledger was
// created, because it was full and no entry was older than MaxAge.
func (l *Ledger) Evictions() uint64 {
	return l.evictions.Load()
}
