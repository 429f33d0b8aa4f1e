// Package incident is the ADK-free part of the incident replay
// (adkv1/samples/incident and its generated ADK Go v2 copy): the
// discrete-event clock (Sim), the simulated enrichment API
// (DependencySim), the scripted model's reasoning (Decide), the
// baselines' breakers (gobreaker with its defaults, NeMo-style), the
// false-trip benchmarks, the tables, targets and chart. The sample keeps
// only what speaks to ADK: the agents, the scripted models, the runner and
// the plugins. See docs/incident.md.
package incident
