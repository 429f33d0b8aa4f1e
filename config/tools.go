package config

import (
	"slices"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Tools returns the tools (names or path.Match patterns) behind each
// dependency of the file (dependencies.NAME.tools), as
// statuspage.WithTools takes them, so the status page names the tools an
// open breaker takes away without the mapping being written twice. A
// dependency without tools is left out; the slices are copies.
func (c *File) Tools() map[registry.Key][]string {
	out := map[registry.Key][]string{}
	for name, d := range c.Dependencies {
		if len(d.Tools) > 0 {
			out[registry.Key(name)] = slices.Clone(d.Tools)
		}
	}
	return out
}
