package main

import (
	adkplugin "google.golang.org/adk/plugin"

	"github.com/adkbreaker/adkbreaker/internal/incident"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// -scenario baselines (the table, the benchmarks and the baselines'
// breakers are internal/incident's): the same outage through what a user
// would write instead of adkbreaker, each configuration a variant of the
// replay.

// baseline is one configuration of the table.
type baseline struct {
	v variant // the same variant runs the single agent and the chain
	// tail builds the configuration's breaker for the false-trip
	// benchmark; nil: no breaker, nothing can trip.
	tail func(clk *registrytest.FakeClock) (incident.TailGuard, error)
}

func noPlugins(*incident.Sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }

var baselines = []baseline{
	{v: variants[0]}, // none
	{v: variants[1]}, // retryandreflect
	{
		v:    variant{name: incident.NameGobreaker, plugins: noPlugins, guard: incident.GobreakerDefaults},
		tail: incident.GobreakerDefaultsTail,
	},
	{
		v:    variant{name: incident.NameNemo, plugins: noPlugins, guard: incident.NemoStyle},
		tail: incident.NemoStyleTail,
	},
	{
		v: variants[3], // adkbreaker-defaults
		tail: func(clk *registrytest.FakeClock) (incident.TailGuard, error) {
			return incident.NewRegistryTail(clk, registry.Policy{})
		},
	},
	{
		v: variants[2], // adkbreaker, the incident's settings
		tail: func(clk *registrytest.FakeClock) (incident.TailGuard, error) {
			return incident.NewRegistryTail(clk, incident.IncidentPolicy())
		},
	},
}

// runBaselines replays every scenario for every configuration of bs (a
// subset of baselines), on the runner, and runs the false-trip benchmarks.
func runBaselines(size incident.BaselineSize, bs []baseline) (*incident.BaselineResults, error) {
	configs := make([]incident.Baseline, len(bs))
	for j, b := range bs {
		configs[j] = incident.Baseline{Name: b.v.name, Tail: b.tail}
	}
	return incident.RunBaselines(size, configs, func(j int, sc incident.BaselineScenario) (*incident.Result, error) {
		if sc.Chain {
			return runChainEvery(sc.Mode, size.ChainEvery, bs[j].v)
		}
		return runEvery(sc.Mode, incident.HealthyLatency, size.Every, bs[j].v)
	})
}
