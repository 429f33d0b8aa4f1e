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
	tk  registry.Ticket
	bd  *binding
	seq uint64 // insertion order within the shard, for cap eviction
}

const ticketShards = 64

// tickets holds admitted calls awaiting their outcome, sharded by call ID so
// that parallel calls (and separate dependencies) rarely share a lock.
type tickets struct {
	seed   maphash.Seed
	perCap int // per-shard cap; beyond it the oldest entry is abandoned
	shards [ticketShards]ticketShard
}

type ticketShard struct {
	mu  sync.Mutex
	m   map[ticketKey]pending // Guarded by mu.
	seq uint64                // Guarded by mu.
	n   atomic.Int64          // len(m), readable without mu
	_   [32]byte              // keep shards on separate cache lines
}

func newTickets(maxPending int) *tickets {
	t := &tickets{seed: maphash.MakeSeed(), perCap: max(maxPending/ticketShards, 16)}
	for i := range t.shards {
		t.shards[i].m = make(map[ticketKey]pending)
	}
	return t
}

func (t *tickets) shard(call string) *ticketShard {
	return &t.shards[maphash.String(t.seed, call)%ticketShards]
}

// put stores a pending call. A colliding key (a model that reuses a call ID)
// or an over-full shard abandons the displaced ticket as Excluded, so a probe
// slot is never held by an entry nobody will report.
func (t *tickets) put(k ticketKey, tk registry.Ticket, bd *binding) {
	s := t.shard(k.call)
	s.mu.Lock()
	old, dup := s.m[k]
	var evicted pending
	var evict bool
	if !dup && len(s.m) >= t.perCap {
		evicted, evict = s.oldestLocked()
	}
	s.seq++
	s.m[k] = pending{tk: tk, bd: bd, seq: s.seq}
	s.n.Store(int64(len(s.m)))
	s.mu.Unlock()
	if dup {
		old.tk.Done(registry.Excluded)
	}
	if evict {
		evicted.tk.Done(registry.Excluded)
	}
}

func (s *ticketShard) oldestLocked() (pending, bool) {
	var ok bool
	var oldK ticketKey
	var oldP pending
	for k, p := range s.m {
		if !ok || p.seq < oldP.seq {
			ok, oldK, oldP = true, k, p
		}
	}
	if ok {
		delete(s.m, oldK)
	}
	return oldP, ok
}

// take removes and returns the pending call for k.
func (t *tickets) take(k ticketKey) (pending, bool) {
	s := t.shard(k.call)
	if s.n.Load() == 0 {
		return pending{}, false
	}
	s.mu.Lock()
	p, ok := s.m[k]
	if ok {
		delete(s.m, k)
		s.n.Store(int64(len(s.m)))
	}
	s.mu.Unlock()
	return p, ok
}

// drain abandons every pending call of invocation inv (reported Excluded, which
// frees probe slots) and returns how many there were.
func (t *tickets) drain(inv string) int {
	var out []pending
	for i := range t.shards {
		s := &t.shards[i]
		if s.n.Load() == 0 {
			continue
		}
		s.mu.Lock()
		for k, p := range s.m {
			if k.inv == inv {
				out = append(out, p)
				delete(s.m, k)
			}
		}
		s.n.Store(int64(len(s.m)))
		s.mu.Unlock()
	}
	for _, p := range out {
		p.tk.Done(registry.Excluded)
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
