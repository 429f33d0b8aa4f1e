package callbacks

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/adkbreaker/adkbreaker/registry"
)

// ticketKey identifies one admitted tool call: ADK passes the same
// InvocationID and FunctionCallID to BeforeTool, OnToolError and AfterTool.
type ticketKey struct {
	inv, call string
}

type pending struct {
	tk   registry.Reservation
	bd   *binding
	inv  string
	call string
	seq  uint64 // insertion order within the shard, for cap eviction
}

const (
	ticketShards = 64
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
	seq   uint64                // Guarded by mu.
	n     atomic.Int64          // entries, readable without mu
	_     [24]byte              // keep shards on separate cache lines
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
		h := uint(call[n-1]) ^ uint(call[n-2])<<3 ^ uint(call[n-3])<<6 ^ uint(call[n-4])<<9
		return &t.shards[(h^h>>6)%ticketShards]
	}
	return &t.shards[maphash.String(t.seed, call)%ticketShards]
}

func (s *ticketShard) lenLocked() int { return len(s.small) + len(s.big) }

// removeLocked removes and returns the entry for k.
func (s *ticketShard) removeLocked(k ticketKey) (pending, bool) {
	for i := range s.small {
		if p := &s.small[i]; p.call == k.call && p.inv == k.inv {
			out := *p
			last := len(s.small) - 1
			s.small[i] = s.small[last]
			s.small[last] = pending{}
			s.small = s.small[:last]
			return out, true
		}
	}
	if s.big != nil {
		if p, ok := s.big[k]; ok {
			delete(s.big, k)
			return p, true
		}
	}
	return pending{}, false
}

// put stores a pending call. A duplicate (same invocation and call ID) or an
// over-full shard abandons the displaced entry as Excluded, so a probe slot is
// never held by an entry nobody will report.
func (t *tickets) put(k ticketKey, tk registry.Reservation, bd *binding) {
	s := t.shard(k.call)
	var displaced [2]pending
	nd := 0
	s.mu.Lock()
	if old, ok := s.removeLocked(k); ok {
		displaced[nd] = old
		nd++
	} else if s.lenLocked() >= t.perCap {
		if ev, ok := s.evictOldestLocked(); ok {
			displaced[nd] = ev
			nd++
		}
	}
	s.seq++
	p := pending{tk: tk, bd: bd, inv: k.inv, call: k.call, seq: s.seq}
	if len(s.small) < smallPending {
		s.small = append(s.small, p)
	} else {
		if s.big == nil {
			s.big = make(map[ticketKey]pending)
		}
		s.big[k] = p
	}
	s.n.Store(int64(s.lenLocked()))
	s.mu.Unlock()
	for _, d := range displaced[:nd] {
		d.tk.Report(registry.Excluded, 0)
	}
}

func (s *ticketShard) evictOldestLocked() (pending, bool) {
	var (
		found  bool
		oldest pending
	)
	for _, p := range s.small {
		if !found || p.seq < oldest.seq {
			found, oldest = true, p
		}
	}
	for _, p := range s.big {
		if !found || p.seq < oldest.seq {
			found, oldest = true, p
		}
	}
	if found {
		s.removeLocked(ticketKey{inv: oldest.inv, call: oldest.call})
	}
	return oldest, found
}

// take removes and returns the pending call for k.
func (t *tickets) take(k ticketKey) (pending, bool) {
	s := t.shard(k.call)
	if s.n.Load() == 0 {
		return pending{}, false
	}
	s.mu.Lock()
	p, ok := s.removeLocked(k)
	if ok {
		s.n.Store(int64(s.lenLocked()))
	}
	s.mu.Unlock()
	return p, ok
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
		kept := s.small[:0]
		for _, p := range s.small {
			if p.inv == inv {
				out = append(out, p)
			} else {
				kept = append(kept, p)
			}
		}
		clear(s.small[len(kept):])
		s.small = kept
		for k, p := range s.big {
			if k.inv == inv {
				out = append(out, p)
				delete(s.big, k)
			}
		}
		s.n.Store(int64(s.lenLocked()))
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
		n += int(t.shards[i].n.Load())
	}
	return n
}
