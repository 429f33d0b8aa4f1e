package telemetry

import (
	"context"
	"log/slog"
	"sync"

	"github.com/adkbreaker/adkbreaker/registry"
)

// logOrder puts a registry's "breaker opened" lines before the
// short-circuit lines they cause, on one logger. Transitions reach the
// logger on the registry's delivery goroutine, short-circuits on the
// caller's: without it a refusal decided just after a trip was often
// logged before the trip itself.
//
// A short-circuit line is written at once when the transition logger has
// already logged every opening of its breaker (the breaker's Trips, and its
// isolation); otherwise it is held, and written right after the line of the
// opening it waits for. Nothing waits on the call path, and no line is lost:
// when the registry dropped transitions (its queue was full), held lines
// are written at once and the count is taken afresh.
type logOrder struct {
	reg *registry.Registry

	mu       sync.Mutex
	opened   map[registry.Key]uint64 // openings logged (or passed by the rate limit), Trips' count
	isolated map[registry.Key]bool
	dropped  uint64 // reg.DroppedTransitions() when last synchronised
	held     []heldLine
}

type heldLine struct {
	key   registry.Key
	trips uint64 // the opened count it waits for
	iso   bool   // it waits for the isolation line
	emit  func()
}

// orders holds the logOrder of every registry and logger whose transitions
// are being logged (LogTransitions), for their LogObservers.
var orders = struct {
	mu sync.Mutex
	m  map[logWatch]*logOrder
}{m: map[logWatch]*logOrder{}}

// resyncLocked takes every breaker's openings as logged: at the start (what
// happened before the subscription is not logged), and after a drop.
func (o *logOrder) resyncLocked() {
	o.dropped = o.reg.DroppedTransitions()
	for k, b := range o.reg.All() {
		st := b.Status()
		o.opened[k] = max(o.opened[k], st.Counts.Trips)
		if st.Isolated {
			o.isolated[k] = true
		}
	}
}

// transition records a transition the subscriber just logged (or left out
// under the rate limit), and writes the lines that waited for it.
func (o *logOrder) transition(t registry.Transition) {
	o.mu.Lock()
	switch {
	case t.To == registry.StateOpen && isIsolation(t.Cause):
		o.isolated[t.Key] = true
	case t.To == registry.StateOpen:
		o.opened[t.Key]++
	case t.To == registry.StateClosed:
		delete(o.isolated, t.Key)
	}
	ready := o.releaseLocked(false)
	o.mu.Unlock()
	for _, l := range ready {
		l.emit()
	}
}

func isIsolation(c registry.Cause) bool {
	return c == registry.CauseIsolated || c == registry.CauseFleetIsolated
}

// releaseLocked removes and returns the held lines whose opening was
// logged (all of them with all).
func (o *logOrder) releaseLocked(all bool) []heldLine {
	var ready []heldLine
	kept := o.held[:0]
	for _, l := range o.held {
		if all || o.satisfiedLocked(l) {
			ready = append(ready, l)
		} else {
			kept = append(kept, l)
		}
	}
	clear(o.held[len(kept):])
	o.held = kept
	return ready
}

func (o *logOrder) satisfiedLocked(l heldLine) bool {
	if l.iso {
		return o.isolated[l.key]
	}
	return o.opened[l.key] >= l.trips
}

// shortCircuit writes (emit) the short-circuit line of a refusal by key's
// breaker, now or once the opening that caused it is logged.
func (o *logOrder) shortCircuit(key registry.Key, isolated bool, emit func()) {
	b, ok := o.reg.Lookup(key)
	if !ok {
		emit()
		return
	}
	l := heldLine{key: key, trips: b.Counts().Trips, iso: isolated, emit: emit}
	o.mu.Lock()
	var ready []heldLine
	if d := o.reg.DroppedTransitions(); d != o.dropped {
		o.resyncLocked()
		ready = o.releaseLocked(true)
	}
	if o.satisfiedLocked(l) {
		ready = append(ready, l)
	} else {
		o.held = append(o.held, l)
	}
	o.mu.Unlock()
	for _, r := range ready {
		r.emit()
	}
}

// orderFor returns the logOrder of reg's transitions on l, or nil when they
// are not logged there.
func orderFor(reg *registry.Registry, l *slog.Logger) *logOrder {
	if reg == nil {
		return nil
	}
	orders.mu.Lock()
	defer orders.mu.Unlock()
	return orders.m[logWatch{reg: reg, l: l}]
}

// emitLater is the line a held short-circuit writes.
func emitLater(l *slog.Logger, ctx context.Context, level slog.Level, msg string, attrs []slog.Attr) func() {
	ctx = context.WithoutCancel(ctx)
	return func() { l.LogAttrs(ctx, level, msg, attrs...) }
}
