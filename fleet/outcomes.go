package fleet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Outcome sharing: the replicas count failures together (docs/fleet.md,
// "Outcome sharing").
//
// Every share interval the sharer reads each local breaker's cumulative
// outcome totals (Breaker.Fresh: atomic loads, nothing on the call path;
// outcomes of calls admitted before a state change are left out, as the
// breaker's own window ignores them),
// adds what changed to that dependency's fleet window, and publishes the
// changes of every dependency in one message. Each replica adds the
// deltas it receives to its own fleet windows. When a window meets the
// policy's failure-rate gate while the local breaker is still closed, the
// replica opens it (Breaker.TripFleet, cause fleet_rate) and the trip
// travels like any local trip.

// MaxOutcomeKeys bounds the dependencies in one outcome message; changes of
// further dependencies in the same interval are dropped and counted
// (OutcomesDropped["over_cap"]).
const MaxOutcomeKeys = 256

const (
	// maxDeltas bounds the deltas a fleet window keeps per dependency;
	// past it the two oldest are merged.
	maxDeltas = 128
	// coalesceParts: a delta arriving within Window/coalesceParts of the
	// newest one is merged into it (keeping the older time: it expires a
	// little early, never late).
	coalesceParts = 64
	// originForget is how long a silent replica's sequence is remembered;
	// maxOrigins bounds how many are.
	originForget = 10 * time.Minute
	maxOrigins   = 1024
	// maxDelta bounds one dependency's counts in one message.
	maxDelta = 1 << 32
	// maxReplicaID bounds a replica ID (WithReplicaID); an outcome message
	// from a longer origin is malformed.
	maxReplicaID = 64
)

// delta is outcomes of one dependency counted at one time (registry clock).
type delta struct {
	at   time.Time
	s, f uint64
}

// window is a dependency's fleet window: the outcomes of every replica of
// the fleet (this one's included) since the breaker last changed state, as
// deltas, oldest first. Guarded by mu; never touched on the call path.
type window struct {
	mu     sync.Mutex
	last   [2]uint64 // this replica's Fresh() successes, failures at the last read
	deltas []delta
	s, f   uint64 // sums over deltas
}

// add counts s successes and f failures at now, under the policy p: a
// time window forgets deltas older than the Window; a count window keeps
// the newest CountWindow outcomes however old (as the breaker's own ring
// does), trimming the oldest delta partially.
func (w *window) add(now time.Time, s, f uint64, p *registry.Policy) {
	w.forget(now, p)
	if s+f == 0 {
		return
	}
	if n := len(w.deltas); n > 0 && !now.Before(w.deltas[n-1].at) && now.Sub(w.deltas[n-1].at) < p.Window/coalesceParts {
		w.deltas[n-1].s += s
		w.deltas[n-1].f += f
	} else {
		if len(w.deltas) == maxDeltas {
			w.deltas[1].s += w.deltas[0].s
			w.deltas[1].f += w.deltas[0].f
			w.deltas[1].at = w.deltas[0].at
			w.deltas = append(w.deltas[:0], w.deltas[1:]...)
		}
		w.deltas = append(w.deltas, delta{at: now, s: s, f: f})
	}
	w.s += s
	w.f += f
	if p.CountWindow > 0 {
		w.trim(uint64(p.CountWindow))
	}
}

// forget expires the deltas of a time window older than p.Window. A count
// window expires nothing: one breaker's count window holds its newest
// outcomes however old, and a fleet window that forgot old successes would
// trip on a few new failures where the breaker's own window would not.
func (w *window) forget(now time.Time, p *registry.Policy) {
	if p.CountWindow == 0 {
		w.expire(now, p.Window)
	}
}

// expire forgets the deltas counted at or before now-span. A delta
// stamped after now (the registry clock stepped back) is re-anchored at
// now: it expires a span later, not a span after the clock catches up.
func (w *window) expire(now time.Time, span time.Duration) {
	for i := range w.deltas {
		if w.deltas[i].at.After(now) {
			w.deltas[i].at = now
		}
	}
	cut := now.Add(-span)
	i := 0
	for i < len(w.deltas) && !w.deltas[i].at.After(cut) {
		w.s -= w.deltas[i].s
		w.f -= w.deltas[i].f
		i++
	}
	if i > 0 {
		w.deltas = append(w.deltas[:0], w.deltas[i:]...)
	}
}

// trim keeps the newest n outcomes. Within a delta the order of its
// outcomes is unknown: a partial trim removes failures and successes in
// proportion, rounding toward removing failures.
func (w *window) trim(n uint64) {
	for w.s+w.f > n && len(w.deltas) > 0 {
		excess := w.s + w.f - n
		d := &w.deltas[0]
		if d.s+d.f <= excess {
			w.s -= d.s
			w.f -= d.f
			w.deltas = append(w.deltas[:0], w.deltas[1:]...)
			continue
		}
		rf := min((excess*d.f+d.s+d.f-1)/(d.s+d.f), d.f)
		rs := excess - rf
		d.s, d.f = d.s-rs, d.f-rf
		w.s, w.f = w.s-rs, w.f-rf
	}
}

// meets reports whether the window meets p's failure-rate gate (the
// consecutive-failure gate stays per replica).
func (w *window) meets(p *registry.Policy) bool {
	if p.DisableFailureRate {
		return false
	}
	n := w.s + w.f
	return n > 0 && n >= uint64(max(p.MinCalls, 0)) && float64(w.f) >= p.FailureRate*float64(n)
}

// reset empties the window and takes this replica's current totals as the
// baseline: a breaker that changed state starts counting afresh.
func (w *window) reset(rep [3]uint64) {
	w.last = [2]uint64{rep[registry.Success], rep[registry.Failure]}
	w.deltas = w.deltas[:0]
	w.s, w.f = 0, 0
}

// clearWindow resets k's fleet window; called on every transition of k.
func (f *Fleet) clearWindow(k registry.Key) {
	b, ok := f.reg.Lookup(k)
	if !ok {
		return
	}
	w := &f.depFor(k).win
	w.mu.Lock()
	w.reset(b.Fresh()) // under the lock: the baseline never moves back
	w.mu.Unlock()
}

// count adds s successes and fl failures to b's fleet window if b is
// closed (otherwise its counts restart at its next transition), and
// reports whether the window then meets the rate gate. Caller holds w.mu.
func count(w *window, b *registry.Breaker, now time.Time, s, fl uint64) (counted, meets bool) {
	if s+fl == 0 || b.State() != registry.StateClosed {
		return false, false
	}
	p := b.Policy()
	w.add(now, s, fl, &p)
	return true, w.meets(&p)
}

// since is now-then for cumulative totals, 0 if they went back.
func since(now, then uint64) uint64 {
	if now < then {
		return 0
	}
	return now - then
}

// tripFleet opens b on the fleet's failure rate; it reports whether it did.
func (f *Fleet) tripFleet(b *registry.Breaker) bool {
	if !b.TripFleet() {
		return false
	}
	f.st.fleetRateTrips.Add(1)
	return true
}

// sharer publishes this replica's outcome deltas every share interval.
func (f *Fleet) sharer() {
	defer f.wg.Done()
	t := time.NewTicker(f.s.share)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			f.share()
		}
	}
}

// share reads every local breaker's outcome totals, counts what changed
// into the fleet windows, and publishes the changes in one message. A
// dependency that this replica's own outcomes just tripped is left out: the
// trip travels instead.
func (f *Fleet) share() {
	now := f.clock.Now()
	var m outcomes
	for k, b := range f.reg.All() {
		w := &f.depFor(k).win
		w.mu.Lock()
		rep := b.Fresh()
		s, fl := since(rep[registry.Success], w.last[0]), since(rep[registry.Failure], w.last[1])
		w.last = [2]uint64{max(rep[registry.Success], w.last[0]), max(rep[registry.Failure], w.last[1])}
		// Outcomes reported while the breaker is not closed (probes, calls
		// admitted before a trip) are not the closed window's.
		counted, meets := count(w, b, now, s, fl)
		w.mu.Unlock()
		if !counted || (meets && f.tripFleet(b)) {
			continue
		}
		if len(m.entries) == MaxOutcomeKeys {
			f.st.outDroppedCap.Add(1)
			continue
		}
		m.entries = append(m.entries, outcomeEntry{dep: k, s: min(s, maxDelta-1), f: min(fl, maxDelta-1)})
	}
	if len(m.entries) == 0 {
		return
	}
	if !f.subscribed.Load() {
		f.st.outDroppedRedis.Add(1)
		return
	}
	f.outSeq = max(f.outSeq+1, uint64(time.Now().UnixMicro()))
	m.origin, m.seq = f.s.replica, f.outSeq
	payload := m.String()
	err := f.do(func(ctx context.Context) error {
		return f.client.Publish(ctx, f.channel(), payload).Err()
	})
	switch {
	case errors.Is(err, errRedisOpen):
		f.st.outDroppedRedis.Add(1)
	case err != nil:
		f.st.outPublishFailed.Add(1)
	default:
		f.st.outPublished.Add(1)
	}
}

// WindowCounts returns what k's fleet window holds now: the successes and
// failures of every replica (this one's included) counted since k's
// breaker last changed state, within its policy's window. Both are 0 when
// outcome sharing is off or k has no breaker.
func (f *Fleet) WindowCounts(k registry.Key) (successes, failures uint64) {
	b, ok := f.reg.Lookup(k)
	if !ok || f.s.share == 0 {
		return 0, 0
	}
	p := b.Policy()
	w := &f.depFor(k).win
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(f.clock.Now(), &p)
	return w.s, w.f
}

// outcomes is one outcome message:
//
//	2|origin|sequence
//	<successes> <failures> <dependency>
//	…
//
// one line per dependency whose counts changed (at most MaxOutcomeKeys).
// The sequence is the sender's wall clock in µs, or its previous sequence
// + 1 if that is later: it increases across the sender's restarts.
type outcomes struct {
	origin  string
	seq     uint64
	entries []outcomeEntry
}

type outcomeEntry struct {
	dep  registry.Key
	s, f uint64
}

// String encodes m for the channel.
func (m outcomes) String() string {
	var b strings.Builder
	b.WriteString("2|")
	b.WriteString(m.origin)
	b.WriteByte('|')
	b.WriteString(strconv.FormatUint(m.seq, 10))
	for _, e := range m.entries {
		b.WriteByte('\n')
		b.WriteString(strconv.FormatUint(e.s, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(e.f, 10))
		b.WriteByte(' ')
		b.WriteString(string(e.dep))
	}
	return b.String()
}

// parseOutcomes parses an outcome message; a message with any malformed
// part is refused whole.
func parseOutcomes(payload string) (outcomes, bool) {
	head, body, ok := strings.Cut(payload, "\n")
	if !ok {
		return outcomes{}, false
	}
	parts := strings.Split(head, "|")
	if len(parts) != 3 || parts[0] != "2" || parts[1] == "" || len(parts[1]) > maxReplicaID || !printable(parts[1]) || strings.Contains(parts[1], " ") {
		return outcomes{}, false
	}
	seq, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || seq == 0 {
		return outcomes{}, false
	}
	m := outcomes{origin: parts[1], seq: seq}
	seen := map[registry.Key]bool{}
	for line := range strings.SplitSeq(body, "\n") {
		ss, rest, ok1 := strings.Cut(line, " ")
		fs, dep, ok2 := strings.Cut(rest, " ")
		s, err1 := strconv.ParseUint(ss, 10, 64)
		fl, err2 := strconv.ParseUint(fs, 10, 64)
		k := registry.Key(dep)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || s >= maxDelta || fl >= maxDelta || s+fl == 0 ||
			!k.Valid() || seen[k] || len(m.entries) == MaxOutcomeKeys {
			return outcomes{}, false
		}
		seen[k] = true
		m.entries = append(m.entries, outcomeEntry{dep: k, s: s, f: fl})
	}
	return m, true
}

// origins remembers the newest sequence counted from each other replica,
// so a duplicated or replayed message never counts twice.
type origins struct {
	mu   sync.Mutex
	last map[string]originRec
}

type originRec struct {
	seq  uint64
	seen time.Time
}

// admit records seq from origin and returns "" if it is new, else the
// reason to drop it: "duplicate" (the same sequence) or "stale" (older).
// A replica none of whose messages was counted for originForget is
// forgotten (a restart with a clock set back is then heard again); at most
// maxOrigins are remembered (the longest silent goes first).
func (o *origins) admit(origin string, seq uint64, now time.Time) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = map[string]originRec{}
	}
	if r, ok := o.last[origin]; ok && now.Sub(r.seen) <= originForget {
		switch {
		case seq == r.seq:
			return "duplicate"
		case seq < r.seq:
			return "stale"
		}
	} else if !ok && len(o.last) >= maxOrigins {
		// The longest silent goes, even when every one was seen after now
		// (the registry clock stepped back).
		oldest, at, found := "", time.Time{}, false
		for id, r := range o.last {
			if now.Sub(r.seen) > originForget {
				delete(o.last, id)
			} else if !found || r.seen.Before(at) {
				oldest, at, found = id, r.seen, true
			}
		}
		if len(o.last) >= maxOrigins {
			delete(o.last, oldest)
		}
	}
	if _, ok := o.last[origin]; !ok {
		// A copy: origin is a slice of the message, which it would pin.
		origin = strings.Clone(origin)
	}
	o.last[origin] = originRec{seq: seq, seen: now}
	return ""
}

// handleOutcomes counts another replica's outcome message into the fleet
// windows. Dependencies without a local breaker are skipped (a message
// never creates one).
func (f *Fleet) handleOutcomes(payload string) {
	if f.s.share == 0 {
		f.st.outDroppedOff.Add(1)
		return
	}
	m, ok := parseOutcomes(payload)
	switch {
	case !ok:
		f.st.outDroppedMalformed.Add(1)
		return
	case m.origin == f.s.replica:
		f.st.outDroppedOwn.Add(1)
		return
	}
	now := f.clock.Now()
	switch f.origins.admit(m.origin, m.seq, now) {
	case "duplicate":
		f.st.outDroppedDuplicate.Add(1)
		return
	case "stale":
		f.st.outDroppedStale.Add(1)
		return
	}
	f.st.outReceived.Add(1)
	for _, e := range m.entries {
		b, ok := f.reg.Lookup(e.dep)
		if !ok {
			f.st.outDroppedUnknown.Add(1)
			continue
		}
		w := &f.depFor(e.dep).win
		w.mu.Lock()
		_, meets := count(w, b, now, e.s, e.f)
		w.mu.Unlock()
		if meets {
			f.tripFleet(b)
		}
	}
}
