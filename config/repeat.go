package config

import (
	"maps"
	"slices"
)

// NoRepeatLimit turns the repeated-call guard off, for every tool
// (defaults.repeat_limit), a dependency's tools or one tool
// (defaults.tool_repeat_limits).
const NoRepeatLimit = -1

// MaxRepeatLimit is the largest repeat limit: the guard counts calls in 16
// bits.
const MaxRepeatLimit = 1<<16 - 2

// validateRepeatLimits checks the repeated-call guard's limits: -1 (off),
// 0 (inherit) or in [2, MaxRepeatLimit].
func (c *File) validateRepeatLimits(ps problems) problems {
	check := func(path string, n int) {
		if n != NoRepeatLimit && n != 0 && (n < 2 || n > MaxRepeatLimit) {
			ps.add(path, "must be -1 (off), 0 (the default) or in [2, %d], got %d", MaxRepeatLimit, n)
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
