package registry

import (
	"context"
	"sync"
)

// notifier delivers transitions to subscribers in order, on a goroutine of
// its own, outside every breaker lock. Enqueueing never blocks: past the
// queue limit, transitions are dropped and counted (subscribers see a gap in
// Seq). The delivery goroutine exists only while there is something to
// deliver, so an idle Registry holds no goroutine.
type notifier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64
	queue   []Transition
	limit   int
	running bool
	dropped uint64
	subs    []*subscriber
	nextID  int
}

type subscriber struct {
	id int
	fn func(Transition)
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
	n.queue = append(n.queue, t)
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
			if n.cond != nil {
				n.cond.Broadcast()
			}
			n.mu.Unlock()
			return
		}
		batch := n.queue
		n.queue = nil
		subs := n.subs
		n.mu.Unlock()
		for _, t := range batch {
			for _, s := range subs {
				deliver(s.fn, t)
			}
		}
	}
}

func deliver(fn func(Transition), t Transition) {
	defer func() { _ = recover() }() // a subscriber's panic must not stop delivery
	fn(t)
}

// Subscribe registers fn to receive every later transition, in order, on a
// delivery goroutine (never on the caller's goroutine and never under a
// breaker lock, so fn may call back into the registry). A slow fn delays
// only later deliveries. The returned function unsubscribes.
func (r *Registry) Subscribe(fn func(Transition)) (unsubscribe func()) {
	n := &r.n
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	// Copy-on-write so drain can iterate without the lock.
	subs := make([]*subscriber, 0, len(n.subs)+1)
	subs = append(subs, n.subs...)
	n.subs = append(subs, &subscriber{id: id, fn: fn})
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
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
// ctx ends.
func (r *Registry) Flush(ctx context.Context) error {
	n := &r.n
	done := make(chan struct{})
	go func() {
		n.mu.Lock()
		if n.cond == nil {
			n.cond = sync.NewCond(&n.mu)
		}
		for n.running || len(n.queue) > 0 {
			n.cond.Wait()
		}
		n.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
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
