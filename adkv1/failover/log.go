package failover

import (
	"context"
	"log/slog"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/registry"
)

// limKey names what a failover log line is about; its key in the limiter
// is the three parts joined.
type limKey struct{ a, b, r string }

func (k limKey) String() string { return k.a + "\x00" + k.b + "\x00" + k.r }

// newLimiter allows one line per key per every (DefaultLogInterval if 0;
// negative: every line).
func newLimiter(every time.Duration) *loglimit.Limiter {
	if every == 0 {
		every = DefaultLogInterval
	}
	return loglimit.New(every, 1)
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
		ok, suppressed := lim.Allow(limKey{a: string(t.Key), r: t.To.String()}.String(), t.At)
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
