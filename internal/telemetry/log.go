package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/observe"
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
	key := logWatch{reg: reg, l: l}
	release := acquire(key, func() func() {
		lim := loglimit.New(LogPeriod, LogBurst)
		o := &logOrder{reg: reg, opened: map[registry.Key]uint64{}, isolated: map[registry.Key]bool{}}
		unsubscribe := reg.Subscribe(func(t registry.Transition) {
			logTransition(l, lim, t)
			o.transition(t)
		})
		// After subscribing: an opening from now on is either counted
		// here or delivered (at worst both), never neither.
		o.mu.Lock()
		o.resyncLocked()
		o.mu.Unlock()
		orders.mu.Lock()
		orders.m[key] = o
		orders.mu.Unlock()
		return func() {
			unsubscribe()
			orders.mu.Lock()
			delete(orders.m, key)
			orders.mu.Unlock()
			o.mu.Lock()
			ready := o.releaseLocked(true)
			o.mu.Unlock()
			for _, h := range ready {
				h.emit()
			}
		}
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

// LogObserver is a observe.Observer that logs the failures a run meets,
// each with the run's invocation ID: the first short-circuit of a
// dependency in an invocation (INFO), and a turn the plugin ended with its
// own answer (WARN). Lines are rate-limited per dependency (per reason for
// ended turns) on clock.
//
// A short-circuit line comes after the "breaker opened" line of the opening
// that caused it when reg's transitions are logged to the same logger
// (LogTransitions): see logOrder.
type LogObserver struct {
	l     *slog.Logger
	reg   *registry.Registry
	clock registry.Clock
	lim   *loglimit.Limiter
}

// NewLogObserver returns a LogObserver logging to l the failures of runs
// whose breakers reg holds (its clock rate-limits the lines).
func NewLogObserver(l *slog.Logger, reg *registry.Registry) *LogObserver {
	clock := registry.SystemClock()
	if reg != nil {
		clock = reg.Clock()
	}
	return &LogObserver{l: l, reg: reg, clock: clock, lim: loglimit.New(LogPeriod, LogBurst)}
}

// ShortCircuit logs the first short-circuit of a dependency in an
// invocation; later ones in the same invocation are counted by the metrics
// only.
func (o *LogObserver) ShortCircuit(ctx context.Context, ev observe.ShortCircuitEvent) {
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
	attrs, ok := o.allow(string(ev.Dependency), attrs)
	if !ok {
		return
	}
	emit := emitLater(o.l, ctx, slog.LevelInfo, LogShortCircuit, attrs)
	if ord := orderFor(o.reg, o.l); ord != nil {
		ord.shortCircuit(ev.Dependency, ev.Reason == degrade.ReasonIsolated, emit)
		return
	}
	emit()
}

// TurnEnded logs a turn BeforeModel ended with the plugin's own answer.
func (o *LogObserver) TurnEnded(ctx context.Context, ev observe.TurnEndEvent) {
	o.log(ctx, "\x00turn:"+string(ev.Reason), slog.LevelWarn, LogTurnEnded,
		slog.String(LogKeyInvocation, ev.InvocationID),
		slog.String(LogKeyReason, string(ev.Reason)),
		slog.Int(LogKeyTurnTotal, ev.TurnTotal),
	)
}

// log writes one line unless key's rate limit is spent, adding how many
// lines for key were left out before it.
func (o *LogObserver) log(ctx context.Context, key string, level slog.Level, msg string, attrs ...slog.Attr) {
	if attrs, ok := o.allow(key, attrs); ok {
		o.l.LogAttrs(context.WithoutCancel(ctx), level, msg, attrs...)
	}
}

// allow applies key's rate limit to a line with attrs, adding how many
// lines for key were left out before it.
func (o *LogObserver) allow(key string, attrs []slog.Attr) ([]slog.Attr, bool) {
	ok, suppressed := o.lim.Allow(key, o.clock.Now())
	if !ok {
		return nil, false
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int(LogKeySuppressed, suppressed))
	}
	return attrs, true
}
