package failover

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// limiter allows one log line per key per interval and counts the lines it
// suppressed, which the next allowed line reports.
type limiter struct {
	mu    sync.Mutex
	every time.Duration // < 0: allow everything
	m     map[limKey]*limEntry
}

type limKey struct{ a, b, r string }

type limEntry struct {
	last       time.Time
	suppressed int
}

// maxLimKeys bounds the limiter. Keys come from closed sets (endpoints ×
// endpoints × reasons), so the bound only guards against misuse.
const maxLimKeys = 4096

func newLimiter(every time.Duration) *limiter {
	if every == 0 {
		every = DefaultLogInterval
	}
	return &limiter{every: every, m: map[limKey]*limEntry{}}
}

func (l *limiter) allow(k limKey, now time.Time) (ok bool, suppressed int) {
	if l.every < 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[k]
	if e == nil {
		if len(l.m) >= maxLimKeys {
			clear(l.m)
		}
		l.m[k] = &limEntry{last: now}
		return true, 0
	}
	if now.Sub(e.last) < l.every {
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	return true, n
}

// LogTransitions logs every state change of the breakers in reg — of keys
// only, when keys are given (a failover Model's endpoints, say: m.Keys()...)
// — as one structured slog line:
//
//	level=WARN msg="adkbreaker: breaker state change" key=model:gemini-2.5-pro@gemini_api/ from=closed to=open cause=trip retry_after=30s seq=7
//
// Opening logs at Warn, half-open and closing at Info. Lines are rate-limited
// per (key, to-state): at most one per DefaultLogInterval, the next one
// carrying the count it suppressed, so a flapping endpoint cannot flood the
// logs. The registry delivers transitions in order on its own goroutine.
// The returned function unsubscribes.
func LogTransitions(reg *registry.Registry, logger *slog.Logger, keys ...registry.Key) (stop func()) {
	if logger == nil {
		logger = slog.Default()
	}
	var only map[registry.Key]bool
	if len(keys) > 0 {
		only = make(map[registry.Key]bool, len(keys))
		for _, k := range keys {
			only[k] = true
		}
	}
	lim := newLimiter(DefaultLogInterval)
	return reg.Subscribe(func(t registry.Transition) {
		if only != nil && !only[t.Key] {
			return
		}
		ok, suppressed := lim.allow(limKey{a: string(t.Key), r: t.To.String()}, t.At)
		if !ok {
			return
		}
		level := slog.LevelInfo
		if t.To == registry.StateOpen {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{
			slog.String("key", string(t.Key)), slog.String("from", t.From.String()), slog.String("to", t.To.String()),
			slog.String("cause", t.Cause.String()), slog.Duration("retry_after", t.RetryAfter), slog.Uint64("seq", t.Seq),
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int("suppressed", suppressed))
		}
		logger.LogAttrs(context.Background(), level, "adkbreaker: breaker state change", attrs...)
	})
}
