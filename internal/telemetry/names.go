package telemetry

// ScopeName is the instrumentation scope of every meter and tracer.
const ScopeName = "github.com/adkbreaker/adkbreaker"

// Metric names. They are API: see docs/telemetry.md.
const (
	MetricShortCircuits      = "adkbreaker.short_circuits"
	MetricTransitions        = "adkbreaker.transitions"
	MetricTransitionsDropped = "adkbreaker.transitions.dropped"
	MetricTurnsEnded         = "adkbreaker.turns_ended"
	MetricBreakerState       = "adkbreaker.breaker.state"
	MetricBreakerRetryAfter  = "adkbreaker.breaker.retry_after"
	MetricFailureRate        = "adkbreaker.breaker.failure_rate"
	MetricOpenDuration       = "adkbreaker.breaker.open_duration"
	MetricProbes             = "adkbreaker.probes"
	MetricCalls              = "adkbreaker.calls"
	MetricCallDuration       = "adkbreaker.call.duration"
	MetricOutcomeMismatches  = "adkbreaker.tool.outcome_mismatches"
	MetricLoopRepeats        = "adkbreaker.loop.repeats"
	MetricShadowAnnotations  = "adkbreaker.shadow_annotations"
)

// Metric attribute keys. Values are bounded: dependencies come from
// configuration (and the registry caps them), tools from the agent's
// declared tools, reasons, states and causes from closed sets.
const (
	AttrDependency = "dependency"
	AttrTool       = "tool"
	AttrReason     = "reason"
	AttrTerminal   = "terminal"
	AttrFrom       = "from"
	AttrTo         = "to"
	AttrCause      = "cause"
	AttrOutcome    = "outcome"
	AttrMode       = "mode"
	AttrAction     = "action"
)

// Span attribute keys, set on the span current in the callback's context
// (ADK's execute_tool span in BeforeTool).
const (
	SpanShortCircuited = "adkbreaker.short_circuited"
	SpanDependency     = "adkbreaker.dependency"
	SpanReason         = "adkbreaker.reason"
	SpanState          = "adkbreaker.state"
	SpanRetryAfter     = "adkbreaker.retry_after_s"
	SpanThisTurn       = "adkbreaker.this_turn"
	SpanTurnTotal      = "adkbreaker.turn_total"
	SpanTerminal       = "adkbreaker.terminal"
	SpanTool           = "adkbreaker.tool"
	SpanFrom           = "adkbreaker.from"
	SpanTo             = "adkbreaker.to"
	SpanCause          = "adkbreaker.cause"
	SpanSeq            = "adkbreaker.seq"
)

// Span event and span names.
const (
	EventShortCircuit = "adkbreaker.short_circuit"
	EventTurnEnded    = "adkbreaker.turn_ended"
	// EventOutcomeMismatch: a failed tool call reached the plugin as a
	// success (a plugin registered ahead of adkbreaker rewrote it).
	EventOutcomeMismatch = "adkbreaker.outcome_mismatch"
	SpanTransition       = "adkbreaker.transition"
)

// Values of AttrMode on adkbreaker.short_circuits: enforce for a call that
// was refused, shadow for one a shadow-mode breaker would have refused and
// let through (registry.Policy.Shadow).
const (
	ModeEnforce = "enforce"
	ModeShadow  = "shadow"
)

// Overflow is the attribute value used once an attribute-set cache is full,
// so that a misconfiguration cannot grow metric cardinality without bound.
const Overflow = "_other"
