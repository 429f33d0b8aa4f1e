package callbacks

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"

	"github.com/adkbreaker/adkbreaker/registry"
)

// altCheck warns, once per dependency and alternative, when a model request
// declares a tool of a dependency whose configured alternative
// (Dependency.Alternatives) is not among the request's tools: the
// unavailable payload offers the alternative by name, and the model of that
// request cannot call it.
//
// The alternative stays in the payload. The payload is fixed per
// dependency and built once (the refusal path does not allocate), while the
// tool list differs per agent and per request (sub-agents, toolsets listed
// per request, an optional MCP server that is down); a name the model
// cannot call costs at most one call ADK answers with "tool not found" and
// the list of tools it has, never a failed run. Dropping it silently would
// hide a configuration error; the warning names it.
type altCheck struct {
	deps map[registry.Key][]string // dependencies with alternatives
	left atomic.Int64              // pairs not warned about yet; 0: nothing to do
	mu   sync.Mutex
	done map[[2]string]bool // (dependency, alternative) pairs warned about
}

func newAltCheck(deps map[registry.Key]Dependency) *altCheck {
	c := &altCheck{deps: map[registry.Key][]string{}, done: map[[2]string]bool{}}
	n := 0
	for _, k := range slices.Sorted(maps.Keys(deps)) {
		if alts := slices.Compact(slices.Sorted(slices.Values(deps[k].Alternatives))); len(alts) > 0 {
			c.deps[k] = alts
			n += len(alts)
		}
	}
	c.left.Store(int64(n))
	return c
}

// checkAlternatives looks at one request. Once every pair was warned about, or when no
// dependency has alternatives, it is one atomic load.
func (h *Handler) checkAlternatives(ctx context.Context, agentName string, req *model.LLMRequest) {
	c := h.alts
	if c.left.Load() == 0 {
		return
	}
	for _, v := range req.Tools {
		t, ok := v.(tool.Tool)
		if !ok {
			continue
		}
		key, ok := h.res.keyOfTool(t)
		if !ok {
			continue
		}
		for _, alt := range c.deps[key] {
			if _, declared := req.Tools[alt]; declared {
				continue
			}
			c.warn(ctx, h.log, key, alt, agentName)
		}
	}
}

func (c *altCheck) warn(ctx context.Context, l *slog.Logger, key registry.Key, alt, agentName string) {
	pair := [2]string{string(key), alt}
	c.mu.Lock()
	if c.done[pair] {
		c.mu.Unlock()
		return
	}
	c.done[pair] = true
	c.left.Add(-1)
	c.mu.Unlock()
	l.WarnContext(context.WithoutCancel(ctx), "adkbreaker: an alternative configured for a dependency is not among the agent's tools; refusals offer it to the model anyway, which cannot call it",
		"dependency", string(key), "alternative", alt, "agent", agentName)
}
