package callbacks

import (
	"context"
	"log/slog"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/registry"
)

// unprotected warns, at most once a minute per dependency, that a call of a
// mapped tool goes unprotected because its breaker could not be created
// (the registry is at capacity, or the key is invalid), naming the run.
func (h *Handler) unprotected(ctx agent.ToolContext, key registry.Key) {
	ok, suppressed := h.overflow.Allow(string(key), h.clock.Now())
	if !ok {
		return
	}
	_, err := h.reg.Get(key)
	h.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "adkbreaker: dependency left unprotected",
		slog.String("invocation_id", ctx.InvocationID()), slog.String("dependency", string(key)), slog.Any("error", err), slog.Int("suppressed", suppressed))
}
