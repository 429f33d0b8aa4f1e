// Package telemetry is adkbreaker's OpenTelemetry instrumentation: metric
// instruments created once, attribute sets cached per key, and the
// annotations adkbreaker puts on ADK's own spans.
//
// An Instrumentation is a observe.Observer (short-circuits, ended turns)
// and, through Watch, a subscriber of a registry (state transitions, state
// gauges). The names it emits are API; docs/telemetry.md lists them.
//
// The default log lines live here too (log.go): LogTransitions subscribes a
// logger to a registry and a LogObserver logs the runs a cut reaches. They
// need no OpenTelemetry provider.
//
// Telemetry never fails a call: observer methods return nothing, recover
// from a misbehaving provider and report through otel.Handle. Only New
// returns errors, because instruments are created there, once.
package telemetry
