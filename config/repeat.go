package config

import (
	"maps"
	"slices"

	"github.com/adkbreaker/adkbreaker/callbacks"
)

// validateRepeatLimits checks the repeated-call guard's limits: -1 (off),
// 0 (inherit) or in [2, callbacks.MaxRepeatLimit].
func (c *File) validateRepeatLimits(ps problems) problems {
	check := func(path string, n int) {
		if n != callbacks.NoRepeatLimit && n != 0 && (n < 2 || n > callbacks.MaxRepeatLimit) {
			ps.add(path, "must be -1 (off), 0 (the default) or in [2, %d], got %d", callbacks.MaxRepeatLimit, n)
		}
	}
	check("defaults.repeat_limit", c.Defaults.RepeatLimit)
	for _, t := range slices.Sorted(maps.Keys(c.Defaults.ToolRepeatLimits)) {
		if t == "" {
			ps.add("defaults.tool_repeat_limits", "empty tool name")
			continue
		}
		check("defaults.tool_repeat_limits."+depSeg(t), c.Defaults.ToolRepeatLimits[t])
	}
	for _, name := range slices.Sorted(maps.Keys(c.Dependencies)) {
		check("dependencies."+depSeg(name)+".repeat_limit", c.Dependencies[name].RepeatLimit)
	}
	return ps
}
