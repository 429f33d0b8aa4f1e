package registry

import (
	"context"
	"sync"
	"sync/atomic"
)

// notifier delivers transitions to subscribers in order, on a goroutine of
// its own, outside every breaker lock. Enqueueing never blocks: past the
// queue limit, transitions are dropped and counted (subscribers see a gap in
// Seq). The delivery goroutine exists only while there is something to
// deliver, so an idle Registry holds no goroutine.
type notifier struct {
	mu      sync.Mutex
	seq     uint64
	queue   []queued
	limit   int
	running bool
	dropped uint64
	subs    []*subscriber // copy-on-write: queued entries share it
	nextID  int
	// enqueued and delivered count queue entries; Flush waits until
	// delivered reaches the enqueued count it saw.
	enqueued, delivered uint64
	waiters             []flushWaiter
}

type subscriber struct {
	id     int
	fn     func(Transition)
	active atomic.Bool // false once unsubscribed: no delivery starts after
}

// queued is a transition with the subscribers it is for: those subscribed
// when it happened.
type queued struct {
	t    Transition
	subs []*subscriber
}

type flushWaiter struct {
	target uint64
	ch     chan struct{}
}

// notify is called with the breaker's mu held, which orders a key's
// transitions; n.mu is the innermost lock.
func (r *Registry) notify(t Transition) {
	n := &r.n
	n.mu.Lock()
	n.seq++
	t.Seq = n.seq
	if len(n.subs) == 0 {
		n.mu.Unlock()
		return
	}
	if len(n.queue) >= n.limit {
		n.dropped++
		n.mu.Unlock()
		return
	}
	n.queue = append(n.queue, queued{t: t, subs: n.subs})
	n.enqueued++
	if !n.running {
		n.running = true
		go n.drain()
	}
	n.mu.Unlock()
}

func (n *notifier) drain() {
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		batch := n.queue
		n.queue = nil
		n.mu.Unlock()
		for _, q := range batch {
			for _, s := range q.subs {
				if s.active.Load() {
					deliver(s.fn, q.t)
				}
			}
		}
		n.mu.Lock()
		n.delivered += uint64(len(batch))
		kept := n.waiters[:0]
		for _, w := range n.waiters {
			if n.delivered >= w.target {
				close(w.ch)
			} else {
				kept = append(kept, w)
			}
		}
		clear(n.waiters[len(kept):])
		n.waiters = kept
		n.mu.Unlock()
	}
}

func deliver(fn func(Transition), t Transition) {
	defer func() { _ = recover() }() // a subscriber's panic must not stop delivery
	fn(t)
}

// Subscribe registers fn to receive every later transition, in order, on a
// delivery goroutine (never on the caller's goroutine and never under a
// breaker lock, so fn may call back into the registry). A slow fn delays
// only later deliveries. fn receives no transition that happened before
// Subscribe returned. The returned function unsubscribes: once it returns, fn
// is not called again, except for a delivery that had already begun.
func (r *Registry) Subscribe(fn func(Transition)) (unsubscribe func()) {
	n := &r.n
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	// Copy-on-write so drain can iterate without the lock.
	subs := make([]*subscriber, 0, len(n.subs)+1)
	subs = append(subs, n.subs...)
	sub := &subscriber{id: id, fn: fn}
	sub.active.Store(true)
	n.subs = append(subs, sub)
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		sub.active.Store(false)
		out := make([]*subscriber, 0, len(n.subs))
		for _, s := range n.subs {
			if s.id != id {
				out = append(out, s)
			}
		}
		n.subs = out
	}
}

// Flush waits until every transition enqueued so far has been delivered, or
// ctx ends. Transitions enqueued after Flush was called do not delay it. It
// must not be called from a subscriber.
func (r *Registry) Flush(ctx context.Context) error {
	n := &r.n
	n.mu.Lock()
	if n.delivered >= n.enqueued {
		n.mu.Unlock()
		return nil
	}
	w := flushWaiter{target: n.enqueued, ch: make(chan struct{})}
	n.waiters = append(n.waiters, w)
	n.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		n.mu.Lock()
		defer n.mu.Unlock()
		for i, x := range n.waiters {
			if x.ch == w.ch {
				n.waiters = append(n.waiters[:i], n.waiters[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
}

// DroppedTransitions returns how many transitions were dropped because the
// delivery queue was full.
func (r *Registry) DroppedTransitions() uint64 {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	return r.n.dropped
}
