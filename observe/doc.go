// Package observe defines the events adkbreaker's tool and model callbacks
// report to an Observer: short-circuits, ended turns, repeated calls,
// outcome mismatches, shadow-mode annotations and guarded calls. Breaker
// state transitions are not here: subscribe to the registry.
//
// The package names no ADK type, so the same events (and the telemetry
// built on them) serve both ADK lines. The callbacks package of each line
// (github.com/adkbreaker/adkbreaker/adkv2/callbacks,
// github.com/adkbreaker/adkbreaker/adkv1/callbacks) declares the same names
// as aliases: an Observer written against either compiles against both.
package observe
