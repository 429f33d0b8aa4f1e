// Package loglimit bounds how often log lines with the same key are
// written, so that a flapping dependency, a retry storm or a flood of bad
// requests cannot flood an operator's logs. Lines left out are counted, and
// the next line written for the key reports how many.
//
// It is the one limiter of the module's log lines: the transition log and
// run observer (internal/telemetry), failover's lines, the callbacks'
// "dependency left unprotected" warning and the status page's refused
// operator actions.
package loglimit

import (
	"sync"
	"time"
)

// MaxKeys bounds a Limiter's memory. Keys come from closed sets
// (dependencies, which the registry caps, endpoints, reasons), so the bound
// only guards against misuse: past it, windows that are over and owe no
// "suppressed" count are forgotten first, and every window only when most
// are live, rather than the table grown.
const MaxKeys = 4096

// Limiter allows up to burst lines per key in each period: a fixed window
// that starts at the first line written after the previous window ended. A
// clock that steps back starts a new window. The zero value is not usable;
// call New. A Limiter is safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	period time.Duration // < 0: allow everything
	burst  int
	keys   map[string]*window
}

type window struct {
	start      time.Time
	n          int
	suppressed int
}

// New returns a Limiter allowing burst (at least 1) lines per key per
// period. A negative period allows every line (logging unlimited).
func New(period time.Duration, burst int) *Limiter {
	return &Limiter{period: period, burst: max(burst, 1), keys: map[string]*window{}}
}

// Allow reports whether a line for key may be written at now and, when it
// may, how many lines for key were left out since the last one written.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed int) {
	if l.period < 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil {
		if len(l.keys) >= MaxKeys {
			l.sweep(now)
		}
		w = &window{start: now}
		l.keys[key] = w
	}
	if now.Sub(w.start) >= l.period || now.Before(w.start) {
		w.start, w.n = now, 0
	}
	if w.n >= l.burst {
		w.suppressed++
		return false, 0
	}
	w.n++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}

// sweep makes room in a full table. Windows that are over and owe no
// "suppressed" count carry nothing and go first; only when most keys are
// live is the table cleared, losing what they owed.
func (l *Limiter) sweep(now time.Time) {
	for k, w := range l.keys {
		if w.suppressed == 0 && (now.Sub(w.start) >= l.period || now.Before(w.start)) {
			delete(l.keys, k)
		}
	}
	if len(l.keys) >= MaxKeys*3/4 {
		clear(l.keys)
	}
}
