package callbacks

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/registry"
)

// A pending call is identified by its tool context. ADK (v1.7.0 and v2.2.0) creates one
// agent.ToolContext per function call and passes that same object to
// BeforeTool, OnToolError and AfterTool, so identity names exactly one call.
// Keys built from strings cannot: call IDs come from the model and repeat (a
// model reusing "call_0" for two calls in one response, parallel sub-agents
// sharing an invocation), and a refused duplicate's AfterTool would then
// report another call's outcome — a premature success for a half-open probe.
// The end-to-end tests on the real runner fail loudly if ADK ever stops
// passing the same object.
type callKey = agent.ToolContext

type pending struct {
	tk    registry.Reservation
	bd    *binding
	ctx   callKey
	inv   string // for AfterRun's drain
	flags callFlags
}

// callFlags record what the handler knows of a pending call.
type callFlags uint8

const (
	// flagGuarded: the call was dispatched to a GuardedTool of this handler,
	// so its Run marks whether the tool really ran.
	flagGuarded callFlags = 1 << iota
	// flagRan: the tool's Run ran (set with flagReported, once the tool
	// returned: nothing reads it earlier).
	flagRan
	// flagReported: Run reported the tool's own outcome; the entry waits
	// for AfterTool to compare it with what AfterTool is shown. (An entry
	// AfterTool has no use for is removed by Run instead: see ran.)
	flagReported
	// flagToolErr: the tool's Run returned an error.
	flagToolErr
	// flagSawErr: the handler's OnToolError saw the call's error, so a
	// later rewrite (an agent's own OnToolError recovering it) came after
	// the handler, not from a plugin registered ahead of it.
	flagSawErr
	// flagShadow: a shadow-mode breaker would have refused this guarded
	// call; BeforeTool observed it, and Run runs the tool untracked.
	flagShadow
)

const (
	ticketShards = 16
	// smallPending entries per shard live in a slice scanned linearly:
	// cheaper than hashing for the usual 0–2 calls in flight per shard.
	smallPending = 16
)

// tickets holds admitted calls awaiting their outcome, sharded by call ID so
// that parallel calls (and separate dependencies) rarely share a lock; within
// a shard, entries are matched by tool context (see callKey).
type tickets struct {
	perCap int // per-shard cap; beyond it the oldest entry is abandoned
	shards [ticketShards]ticketShard
}

type ticketShard struct {
	mu    sync.Mutex
	small []pending           // Guarded by mu.
	big   map[callKey]pending // Guarded by mu; nil until small overflows.
	// n mirrors the entry count (written under mu) so that AfterRun can skip
	// empty shards without locking them.
	n atomic.Int32
	_ [36]byte // keep shards on separate cache lines
}

func newTickets(maxPending int) *tickets {
	t := &tickets{perCap: max(maxPending/ticketShards, smallPending)}
	for i := range t.shards {
		t.shards[i].small = make([]pending, 0, smallPending)
	}
	return t
}

// shard picks a shard from the call ID. ADK's IDs ("adk-<uuid>") and model
// IDs ("call_0", "call_1", …) end in varying characters, so the last two
// are enough to spread lock contention. It is small enough to be inlined:
// every callback computes it.
func (t *tickets) shard(call string) *ticketShard {
	var x uint
	if n := len(call); n >= 2 {
		x = uint(call[n-1]) ^ uint(call[n-2])<<3
	} else if n == 1 {
		x = uint(call[0])
	}
	return &t.shards[x%ticketShards]
}

func (s *ticketShard) lenLocked() int { return len(s.small) + len(s.big) }

// indexLocked returns the position of ctx's call in small, or -1.
func (s *ticketShard) indexLocked(ctx callKey) int {
	for i := range s.small {
		if s.small[i].ctx == ctx {
			return i
		}
	}
	return -1
}

// removeAtLocked removes small[i] by moving the last entry into its place.
// The vacated slot's tool context and result are cleared: a stale tool
// context would keep the finished invocation's whole object graph (session,
// agent, requests) reachable, a result the tool's answer. The rest is left
// for the slot's next use to overwrite (reserve and put set every field they
// read; nothing reads past len): an invocation ID, the long-lived breaker
// and binding, and a reported reservation's few bytes.
func (s *ticketShard) removeAtLocked(i int) {
	last := len(s.small) - 1
	if i != last {
		s.small[i] = s.small[last]
	}
	s.small[last].ctx = nil
	s.small = s.small[:last]
}

// put stores a pending call and reports whether it did. A context that is
// already pending (BeforeTool twice for one call, which ADK does not do) is
// not tracked again (false): the caller releases its reservation. Past the
// per-shard cap an ordinary call is abandoned as Excluded to make room; a
// half-open probe never is (abandoning it would free its slot and admit a
// second probe while the first runs). Probes are few (HalfOpenProbes per
// breaker, bounded by the registry's cap), so a shard full of probes goes
// over its cap rather than drop one; their leases still bound them.
func (t *tickets) put(ctx callKey, call, inv string, tk registry.Reservation, bd *binding, flags callFlags) bool {
	return t.insert(call, pending{tk: tk, bd: bd, ctx: ctx, inv: inv, flags: flags})
}

// putErred stores a guarded call whose Run admitted it, reported its
// outcome and saw the tool fail (the entry carries no reservation), for
// OnToolError and AfterTool to compare with what they are shown (see ran).
func (t *tickets) putErred(ctx callKey, call, inv string, bd *binding) {
	p := pending{bd: bd, ctx: ctx, inv: inv}
	p.markErred()
	t.insert(call, p)
}

// insert is put's body: it stores p unless p.ctx is already pending.
func (t *tickets) insert(call string, p pending) bool {
	ctx := p.ctx
	s := t.shard(call)
	s.mu.Lock()
	if s.indexLocked(ctx) >= 0 {
		s.mu.Unlock()
		return false
	}
	if _, dup := s.big[ctx]; dup {
		s.mu.Unlock()
		return false
	}
	var evicted pending
	evict := false
	if s.lenLocked() >= t.perCap {
		evicted, evict = s.evictLocked()
	}
	if len(s.small) < smallPending {
		s.small = append(s.small, p)
	} else {
		if s.big == nil {
			s.big = make(map[callKey]pending)
		}
		s.big[ctx] = p
	}
	s.n.Store(int32(s.lenLocked()))
	s.mu.Unlock()
	if evict {
		evicted.tk.Report(registry.Excluded, 0)
	}
	return true
}

// reserve admits a call on a closed breaker directly into a new slot of its
// shard: nothing is copied, and the shard lock is taken once. It returns
// false, having changed nothing, when the fast path does not apply (the
// breaker is not closed, the shard's slice is full, or the key is already
// pending); the caller then goes through Reserve and put.
//
// gobreaker is called with the shard lock held. That is safe: lock order is
// shard → gobreaker → breaker → notifier, and nothing holding a later lock
// takes a shard lock; no user code runs there.
func (t *tickets) reserve(ctx callKey, call, inv string, bd *binding, flags callFlags) bool {
	s := t.shard(call)
	s.mu.Lock()
	n := len(s.small)
	if n == smallPending || s.big != nil || s.indexLocked(ctx) >= 0 {
		s.mu.Unlock()
		return false
	}
	s.small = s.small[:n+1]
	p := &s.small[n]
	if !bd.br.TryReserve(&p.tk) {
		s.small = s.small[:n]
		s.mu.Unlock()
		return false
	}
	p.bd, p.ctx, p.inv, p.flags = bd, ctx, inv, flags
	s.n.Store(int32(n + 1))
	s.mu.Unlock()
	return true
}

// flagsOf returns the flags of ctx's pending call, if there is one.
func (s *ticketShard) flagsOf(ctx callKey) (callFlags, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.indexLocked(ctx); i >= 0 {
		return s.small[i].flags, true
	}
	p, ok := s.big[ctx]
	return p.flags, ok
}

// evictLocked removes one ordinary call to make room: one from the overflow
// map if there is one, else the slice's first (not necessarily the oldest:
// removal moves the last entry into the gap). Probes are never evicted; with
// nothing but probes it removes nothing and returns false.
func (s *ticketShard) evictLocked() (pending, bool) {
	for k, p := range s.big {
		if p.tk.Probe() {
			continue
		}
		s.deleteBigLocked(k)
		return p, true
	}
	for i := range s.small {
		if s.small[i].tk.Probe() {
			continue
		}
		p := s.small[i]
		s.removeAtLocked(i)
		return p, true
	}
	return pending{}, false
}

// pendingKey returns the dependency key of ctx's pending call, if there is
// one. It changes nothing.
func (t *tickets) pendingKey(ctx callKey, call string) (registry.Key, bool) {
	s := t.shard(call)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.indexLocked(ctx); i >= 0 {
		if s.small[i].flags&flagReported != 0 {
			return "", false // its guard already reported it
		}
		return s.small[i].bd.key, true
	}
	if p, ok := s.big[ctx]; ok && p.flags&flagReported == 0 {
		return p.bd.key, true
	}
	return "", false
}

// take removes ctx's pending call and returns its reservation, for the
// caller to report, and its binding (nil when there is none).
func (t *tickets) take(ctx callKey, call string) (registry.Reservation, *binding) {
	p, _ := t.shard(call).takeEntry(ctx)
	return p.tk, p.bd
}

// takePlainSuccess is AfterTool's fast path for the common case: an
// ordinary call (unguarded, not a probe) that succeeded is reported in place
// under the shard lock and removed, and only its binding is returned — no
// pending entry is copied out (takeEntry's return value is ~150 bytes). found
// is false when there is no entry; handled is false, with the entry left in
// place, when it needs takeEntry's full path.
func (s *ticketShard) takePlainSuccess(ctx callKey) (bd *binding, found, handled bool) {
	s.mu.Lock()
	if i := s.indexLocked(ctx); i >= 0 {
		e := &s.small[i]
		if e.flags != 0 || e.tk.Probe() {
			s.mu.Unlock()
			return nil, true, false
		}
		e.tk.Report(registry.Success, 0)
		bd = e.bd
		s.removeAtLocked(i)
		s.n.Store(int32(s.lenLocked()))
		s.mu.Unlock()
		return bd, true, true
	}
	_, found = s.big[ctx]
	s.mu.Unlock()
	return nil, found, false
}

// takeEntry removes ctx's pending call and returns it.
func (s *ticketShard) takeEntry(ctx callKey) (p pending, found bool) {
	s.mu.Lock()
	if i := s.indexLocked(ctx); i >= 0 {
		p = s.small[i]
		s.removeAtLocked(i)
		s.n.Store(int32(s.lenLocked()))
		s.mu.Unlock()
		p.ctx = nil
		return p, true
	}
	p, found = s.big[ctx]
	if found {
		s.deleteBigLocked(ctx)
	}
	s.mu.Unlock()
	p.ctx = nil
	return p, found
}

// update runs fn on ctx's pending call under its shard lock and reports
// whether there was one.
func (t *tickets) update(ctx callKey, call string, fn func(p *pending)) bool {
	s := t.shard(call)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.indexLocked(ctx); i >= 0 {
		fn(&s.small[i])
		return true
	}
	if p, ok := s.big[ctx]; ok {
		fn(&p)
		s.big[ctx] = p
		return true
	}
	return false
}

// ran reports the tool's own outcome of ctx's call, marks the call as run
// by a GuardedTool and reports whether there was an unreported pending call.
// When the tool erred (toolErr) the entry stays, marked, until AfterTool
// (or AfterRun) removes it: AfterTool compares the outcome it is shown with
// the tool's error. Otherwise the entry is removed at once.
//
// An ordinary success without a retry hint is reported in place, under the
// shard lock, as takePlainSuccess does (it cannot change the state, so no
// notification is sent under the lock); anything else is reported after
// the lock is released.
func (t *tickets) ran(ctx callKey, call string, o registry.Outcome, hint time.Duration, toolErr bool) bool {
	s := t.shard(call)
	s.mu.Lock()
	if i := s.indexLocked(ctx); i >= 0 && !toolErr && o == registry.Success && hint == 0 {
		// The common case, kept small so that it needs few registers.
		if e := &s.small[i]; e.flags&flagReported == 0 && !e.tk.Probe() {
			e.tk.Report(registry.Success, 0)
			s.removeAtLocked(i)
			s.n.Store(int32(s.lenLocked()))
			s.mu.Unlock()
			return true
		}
	}
	return s.ranLocked(ctx, o, hint, toolErr)
}

// ranLocked is ran past its common case; it releases the shard lock.
func (s *ticketShard) ranLocked(ctx callKey, o registry.Outcome, hint time.Duration, toolErr bool) bool {
	i := s.indexLocked(ctx)
	if i < 0 {
		tk, ok := s.ranBigLocked(ctx, toolErr)
		s.mu.Unlock()
		tk.Report(o, hint)
		return ok
	}
	e := &s.small[i]
	if e.flags&flagReported != 0 {
		s.mu.Unlock()
		return false
	}
	var tk registry.Reservation
	if o == registry.Success && hint == 0 && !e.tk.Probe() {
		e.tk.Report(registry.Success, 0) // in place, as above
	} else {
		tk = e.tk // reported below, without the lock
	}
	if toolErr {
		e.tk = registry.Reservation{}
		e.markErred()
	} else {
		s.removeAtLocked(i)
		s.n.Store(int32(s.lenLocked()))
	}
	s.mu.Unlock()
	tk.Report(o, hint)
	return true
}

// markErred marks a kept entry: a guarded call that ran, was reported, and
// whose tool erred (see ran).
func (p *pending) markErred() { p.flags |= flagGuarded | flagRan | flagReported | flagToolErr }

// ranBigLocked is ran for a call in the shard's overflow map: it returns
// the reservation to report.
func (s *ticketShard) ranBigLocked(ctx callKey, toolErr bool) (registry.Reservation, bool) {
	p, ok := s.big[ctx]
	if !ok || p.flags&flagReported != 0 {
		return registry.Reservation{}, false
	}
	tk := p.tk
	if !toolErr {
		s.deleteBigLocked(ctx)
		return tk, true
	}
	p.tk = registry.Reservation{}
	p.markErred()
	s.big[ctx] = p
	return tk, true
}

// empty reports, without locking, that nothing is pending in the shard.
// Only a caller that put the call itself (or that runs after whatever put
// it, as ADK's callbacks of one call do) may conclude from it that its call
// is not pending.
func (s *ticketShard) empty() bool { return s.n.Load() == 0 }

// sawError records that OnToolError saw ctx's call's error and returns the
// call's flags.
func (t *tickets) sawError(ctx callKey, call string) (f callFlags, found bool) {
	found = t.update(ctx, call, func(p *pending) {
		p.flags |= flagSawErr
		f = p.flags
	})
	return f, found
}

// deleteBigLocked removes an overflow entry; an emptied overflow map is
// dropped so that reserve's fast path applies again.
func (s *ticketShard) deleteBigLocked(ctx callKey) {
	delete(s.big, ctx)
	if len(s.big) == 0 {
		s.big = nil
	}
	s.n.Store(int32(s.lenLocked()))
}

// drain abandons every pending call of invocation inv (reported Excluded,
// which frees probe slots) and returns how many there were.
func (t *tickets) drain(inv string) int {
	var out []pending
	for i := range t.shards {
		s := &t.shards[i]
		if s.n.Load() == 0 {
			continue
		}
		s.mu.Lock()
		for i := 0; i < len(s.small); {
			if s.small[i].inv == inv {
				out = append(out, s.small[i])
				s.removeAtLocked(i)
				continue
			}
			i++
		}
		for k, p := range s.big {
			if p.inv == inv {
				out = append(out, p)
				s.deleteBigLocked(k)
			}
		}
		s.n.Store(int32(s.lenLocked()))
		s.mu.Unlock()
	}
	for _, p := range out {
		p.tk.Report(registry.Excluded, 0)
	}
	return len(out)
}

// len returns the number of pending calls.
func (t *tickets) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.lenLocked()
		s.mu.Unlock()
	}
	return n
}
