package breaker

import (
	"log/slog"
	"runtime"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/internal/telemetry"
)

// WithoutBreakerLog turns off the plugin's default log lines about
// breakers: every transition (WARN when a breaker opens, INFO when it goes
// half-open or closes), the first short-circuit of a dependency in each run
// and turns the plugin ended, each with the run's invocation ID. Warnings
// about the plugin's own faults (a dependency left unprotected) stay. Use it
// when transitions already reach a person another way (telemetry alerts, a
// registry subscriber); WithLogger sets where the lines go. See
// docs/telemetry.md.
func WithoutBreakerLog() Option {
	return optionFunc(func(s *settings) { s.noBreakerLog = true })
}

// breakerLog adds the failure-line observer to cb (before the handler is
// built) and returns the function that starts logging the handler's
// registry's transitions once it exists.
func (s *settings) breakerLog(cb *callbacks.Config) (start func(*callbacks.Handler)) {
	if s.noBreakerLog || cb.Registry == nil {
		return func(*callbacks.Handler) {}
	}
	l := cb.Logger
	if l == nil {
		l = slog.Default()
	}
	cb.Observer = fanOut(cb.Observer, telemetry.NewLogObserver(l, cb.Registry))
	return func(h *callbacks.Handler) {
		stop := telemetry.LogTransitions(h.Registry(), l)
		// As for telemetry: the subscription lasts as long as the handler.
		runtime.AddCleanup(h, func(stop func()) { stop() }, stop)
	}
}
