package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/callbacks"
	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Log lines are the part of telemetry that needs nothing installed: seed
// 001's "the fact that a cut happened always reaches a person". Their
// messages and attribute keys are API, listed in docs/telemetry.md.
const (
	LogOpened        = "adkbreaker: breaker opened"
	LogHalfOpen      = "adkbreaker: breaker half-open"
	LogClosed        = "adkbreaker: breaker closed"
	LogShortCircuit  = "adkbreaker: call short-circuited"
	LogTurnEnded     = "adkbreaker: turn ended without the model"
	LogKeyDependency = "dependency"
	LogKeyFrom       = "from"
	LogKeyTo         = "to"
	LogKeyCause      = "cause"
	LogKeyHold       = "hold"
	LogKeySuppressed = "suppressed"
	LogKeyInvocation = "invocation_id"
	LogKeyTool       = "tool"
	LogKeyReason     = "reason"
	LogKeyRetryAfter = "retry_after"
	LogKeyTurnTotal  = "turn_total"
)

// Log rate limits: at most LogBurst lines per dependency (and, for ended
// turns, per reason) per LogPeriod. Lines left out are counted and the next
// line logged says how many (LogKeySuppressed); the metrics count them all.
const (
	LogBurst  = 5
	LogPeriod = time.Minute
)

// LogTransitions logs every transition of reg through l: WARN when a breaker
// opens (with the open hold), INFO when it goes half-open or closes, each
// with the dependency, from, to and cause, rate-limited per dependency by
// the transition's time. Logging the same registry to the same logger twice
// (two plugins sharing a registry) logs each transition once. stop
// unsubscribes; it is idempotent.
func LogTransitions(reg *registry.Registry, l *slog.Logger) (stop func()) {
	if reg == nil || l == nil {
		return func() {}
	}
	release := acquire(logWatch{reg: reg, l: l}, func() func() {
		lim := loglimit.New(LogPeriod, LogBurst)
		return reg.Subscribe(func(t registry.Transition) { logTransition(l, lim, t) })
	})
	var once sync.Once
	return func() { once.Do(release) }
}

type logWatch struct {
	reg *registry.Registry
	l   *slog.Logger
}

func logTransition(l *slog.Logger, lim *loglimit.Limiter, t registry.Transition) {
	at := t.At
	if at.IsZero() {
		at = time.Now()
	}
	ok, suppressed := lim.Allow(string(t.Key), at)
	if !ok {
		return
	}
	level, msg := slog.LevelInfo, LogClosed
	switch t.To {
	case registry.StateOpen:
		level, msg = slog.LevelWarn, LogOpened
	case registry.StateHalfOpen:
		msg = LogHalfOpen
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs,
		slog.String(LogKeyDependency, string(t.Key)),
		slog.String(LogKeyFrom, t.From.String()),
		slog.String(LogKeyTo, t.To.String()),
		slog.String(LogKeyCause, t.Cause.String()),
	)
	if t.To == registry.StateOpen && t.RetryAfter > 0 { // an isolation has no hold: it lasts until Reset
		attrs = append(attrs, slog.Duration(LogKeyHold, t.RetryAfter))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int(LogKeySuppressed, suppressed))
	}
	l.LogAttrs(context.Background(), level, msg, attrs...)
}

// LogObserver is a callbacks.Observer that logs the failures a run meets,
// each with the run's invocation ID: the first short-circuit of a
// dependency in an invocation (INFO), and a turn the plugin ended with its
// own answer (WARN). Lines are rate-limited per dependency (per reason for
// ended turns) on clock.
type LogObserver struct {
	l     *slog.Logger
	clock registry.Clock
	lim   *loglimit.Limiter
}

// NewLogObserver returns a LogObserver logging to l; clock is the
// registry's.
func NewLogObserver(l *slog.Logger, clock registry.Clock) *LogObserver {
	if clock == nil {
		clock = registry.SystemClock()
	}
	return &LogObserver{l: l, clock: clock, lim: loglimit.New(LogPeriod, LogBurst)}
}

// ShortCircuit logs the first short-circuit of a dependency in an
// invocation; later ones in the same invocation are counted by the metrics
// only.
func (o *LogObserver) ShortCircuit(ctx context.Context, ev callbacks.ShortCircuitEvent) {
	if ev.ThisTurn != 1 {
		return
	}
	attrs := []slog.Attr{
		slog.String(LogKeyInvocation, ev.InvocationID),
		slog.String(LogKeyDependency, string(ev.Dependency)),
		slog.String(LogKeyTool, ev.Tool),
		slog.String(LogKeyReason, string(ev.Reason)),
		slog.Duration(LogKeyRetryAfter, ev.RetryAfter),
	}
	if ev.RetryAfter == registry.UntilReset {
		attrs = attrs[:4] // isolated until an operator resets it: no retry time
	}
	o.log(ctx, string(ev.Dependency), slog.LevelInfo, LogShortCircuit, attrs...)
}

// TurnEnded logs a turn BeforeModel ended with the plugin's own answer.
func (o *LogObserver) TurnEnded(ctx context.Context, ev callbacks.TurnEndEvent) {
	o.log(ctx, "\x00turn:"+string(ev.Reason), slog.LevelWarn, LogTurnEnded,
		slog.String(LogKeyInvocation, ev.InvocationID),
		slog.String(LogKeyReason, string(ev.Reason)),
		slog.Int(LogKeyTurnTotal, ev.TurnTotal),
	)
}

// log writes one line unless key's rate limit is spent, adding how many
// lines for key were left out before it.
func (o *LogObserver) log(ctx context.Context, key string, level slog.Level, msg string, attrs ...slog.Attr) {
	ok, suppressed := o.lim.Allow(key, o.clock.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int(LogKeySuppressed, suppressed))
	}
	o.l.LogAttrs(context.WithoutCancel(ctx), level, msg, attrs...)
}

