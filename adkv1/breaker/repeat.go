package breaker

import (
	"context"
	"maps"
	"slices"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// WithRepeatLimit sets N of the repeated-call guard (callbacks.Config.RepeatLimit):
// within one turn (and one ParallelAgent branch), the N-th call of a tool
// with the same arguments (key order, number forms and Unicode forms do
// not matter; parallel calls count) that the breaker admits is answered
// with a note instead of running the tool, and the next one ends the turn
// with a final answer. Calls the breaker refuses get its unavailable
// payload instead, and calls it counts as failures do not count toward N
// (see docs/design.md, "One answer per call"). The default is callbacks.DefaultRepeatLimit (3);
// callbacks.NoRepeatLimit (-1) turns the guard off.
func WithRepeatLimit(n int) Option {
	return optionFunc(func(s *settings) { s.cb.RepeatLimit = n })
}

// WithToolRepeatLimit sets the repeated-call guard's N for one tool:
// callbacks.NoRepeatLimit for a tool that is meant to be called again with
// the same arguments (a polling tool), or the tool's own N. A dependency's
// tools take theirs from callbacks.Dependency.RepeatLimit
// (WithDependencyOptions).
func WithToolRepeatLimit(tool string, n int) Option {
	return optionFunc(func(s *settings) {
		if s.cb.ToolRepeatLimits == nil {
			s.cb.ToolRepeatLimits = map[string]int{}
		}
		s.cb.ToolRepeatLimits[tool] = n
	})
}

// applyRepeatLimits takes the file's repeat limits (defaults.repeat_limit,
// defaults.tool_repeat_limits, dependencies.*.repeat_limit).
func (s *settings) applyRepeatLimits(f *config.File) {
	d := f.Defaults
	if d.RepeatLimit != 0 {
		s.cb.RepeatLimit = d.RepeatLimit
	}
	for _, t := range slices.Sorted(maps.Keys(d.ToolRepeatLimits)) {
		WithToolRepeatLimit(t, d.ToolRepeatLimits[t]).apply(s)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Dependencies)) {
		if n := f.Dependencies[name].RepeatLimit; n != 0 {
			if s.cb.Dependencies == nil {
				s.cb.Dependencies = map[registry.Key]callbacks.Dependency{}
			}
			o := s.cb.Dependencies[registry.Key(name)]
			o.RepeatLimit = n
			s.cb.Dependencies[registry.Key(name)] = o
		}
	}
}

// RepeatedCall forwards to the observers that want the repeated-call
// guard's decisions.
func (o observers) RepeatedCall(ctx context.Context, ev callbacks.RepeatEvent) {
	for _, x := range o {
		if r, ok := x.(callbacks.RepeatObserver); ok {
			r.RepeatedCall(ctx, ev)
		}
	}
}
