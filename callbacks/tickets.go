package callbacks

import (
	"hash/maphash"
	"sync"

	"github.com/adkbreaker/adkbreaker/registry"
)

// ticketKey identifies one admitted tool call: ADK passes the same
// invocation, branch and function-call ID, and the same tool, to BeforeTool,
// OnToolError and AfterTool. The call ID comes from the model and may repeat
// (a model reusing "call_0", parallel sub-agents sharing an invocation), so
// the branch and the tool name are part of the key: a call can never report
// another call's outcome, and a name the model invented (which reaches only
// OnToolError) never matches a real call.
type ticketKey struct {
	inv, branch, call, tool string
}

type pending struct {
	tk     registry.Reservation
	bd     *binding // bd.tool is the key's tool name
	inv    string
	branch string
	call   string
}

func (p *pending) matches(k *ticketKey) bool {
	return p.call == k.call && p.inv == k.inv && p.branch == k.branch && p.bd.tool == k.tool
}

const (
	ticketShards = 16
	// smallPending entries per shard live in a slice scanned linearly:
	// cheaper than hashing for the usual 0–2 calls in flight per shard.
	smallPending = 16
)

// tickets holds admitted calls awaiting their outcome, sharded by call ID so
// that parallel calls (and separate dependencies) rarely share a lock.
//
// Entries are matched on (invocation, call ID): call IDs are unique per
// invocation (ADK makes "adk-<uuid>" IDs), but a model may reuse its own IDs
// ("call_0") across concurrent invocations.
type tickets struct {
	seed   maphash.Seed
	perCap int // per-shard cap; beyond it the oldest entry is abandoned
	shards [ticketShards]ticketShard
}

type ticketShard struct {
	mu    sync.Mutex
	small []pending             // Guarded by mu.
	big   map[ticketKey]pending // Guarded by mu; nil until small overflows.
	_     [40]byte              // keep shards on separate cache lines
}

func newTickets(maxPending int) *tickets {
	t := &tickets{seed: maphash.MakeSeed(), perCap: max(maxPending/ticketShards, smallPending)}
	for i := range t.shards {
		t.shards[i].small = make([]pending, 0, smallPending)
	}
	return t
}

// shard picks a shard from the call ID. ADK's IDs ("adk-<uuid>") and model
// IDs end in varying characters, so the tail is enough to spread lock
// contention; short IDs fall back to a full hash.
func (t *tickets) shard(call string) *ticketShard {
	if n := len(call); n >= 8 {
		return &t.shards[(uint(call[n-1])^uint(call[n-2])<<3)%ticketShards]
	}
	return &t.shards[maphash.String(t.seed, call)%ticketShards]
}

func (s *ticketShard) lenLocked() int { return len(s.small) + len(s.big) }

// indexLocked returns the position of k in small, or -1.
func (s *ticketShard) indexLocked(k *ticketKey) int {
	for i := range s.small {
		if s.small[i].matches(k) {
			return i
		}
	}
	return -1
}

// removeAtLocked removes small[i] by moving the last entry into its place.
// The vacated slot keeps its old contents until reused: at most
// smallPending entries per shard, so nothing is retained without bound.
func (s *ticketShard) removeAtLocked(i int) {
	last := len(s.small) - 1
	if i != last {
		s.small[i] = s.small[last]
	}
	s.small = s.small[:last]
}

// put stores a pending call and reports whether it did. A second call with
// the same key while the first is pending is not tracked (false): the caller
// releases its reservation, and the call runs unprotected rather than take
// the first call's outcome. Past the per-shard cap the oldest entry is
// abandoned as Excluded, so a probe slot is never held by an entry nobody
// will report.
func (t *tickets) put(k *ticketKey, tk registry.Reservation, bd *binding) bool {
	s := t.shard(k.call)
	s.mu.Lock()
	if s.indexLocked(k) >= 0 {
		s.mu.Unlock()
		return false
	}
	if _, dup := s.big[*k]; dup {
		s.mu.Unlock()
		return false
	}
	var evicted pending
	evict := false
	if s.lenLocked() >= t.perCap {
		evicted, evict = s.evictLocked()
	}
	p := pending{tk: tk, bd: bd, inv: k.inv, branch: k.branch, call: k.call}
	if len(s.small) < smallPending {
		s.small = append(s.small, p)
	} else {
		if s.big == nil {
			s.big = make(map[ticketKey]pending)
		}
		s.big[*k] = p
	}
	if len(s.big) == 0 {
		s.big = nil
	}
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
func (t *tickets) reserve(k *ticketKey, bd *binding) bool {
	s := t.shard(k.call)
	s.mu.Lock()
	n := len(s.small)
	if n == smallPending || s.big != nil || s.indexLocked(k) >= 0 {
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
	p.bd, p.inv, p.branch, p.call = bd, k.inv, k.branch, k.call
	s.mu.Unlock()
	return true
}

// reportSuccess reports the pending call for k as a success, in place, and
// returns its binding (nil when there is none: the plugin's own
// short-circuit, or a call it never admitted).
func (t *tickets) reportSuccess(k *ticketKey) *binding {
	s := t.shard(k.call)
	s.mu.Lock()
	if i := s.indexLocked(k); i >= 0 {
		p := &s.small[i]
		p.tk.Report(registry.Success, 0)
		bd := p.bd
		s.removeAtLocked(i)
		s.mu.Unlock()
		return bd
	}
	p, ok := s.big[*k]
	if ok {
		delete(s.big, *k)
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	p.tk.Report(registry.Success, 0)
	return p.bd
}

// evictLocked removes one entry to make room: one from the overflow map if
// there is one, else the oldest-inserted of the slice (its first element).
func (s *ticketShard) evictLocked() (pending, bool) {
	for k, p := range s.big {
		delete(s.big, k)
		return p, true
	}
	if len(s.small) == 0 {
		return pending{}, false
	}
	p := s.small[0]
	s.removeAtLocked(0)
	return p, true
}

// take removes the pending call for k and returns its reservation and
// binding (nil when there is none).
func (t *tickets) take(k *ticketKey) (registry.Reservation, *binding) {
	s := t.shard(k.call)
	s.mu.Lock()
	if i := s.indexLocked(k); i >= 0 {
		tk, bd := s.small[i].tk, s.small[i].bd
		s.removeAtLocked(i)
		s.mu.Unlock()
		return tk, bd
	}
	p, ok := s.big[*k]
	if ok {
		delete(s.big, *k)
	}
	s.mu.Unlock()
	return p.tk, p.bd
}

// drain abandons every pending call of invocation inv (reported Excluded,
// which frees probe slots) and returns how many there were.
func (t *tickets) drain(inv string) int {
	var out []pending
	for i := range t.shards {
		s := &t.shards[i]
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
			if k.inv == inv {
				out = append(out, p)
				delete(s.big, k)
			}
		}
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
