package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// MaxAttributeSets caps the cached short-circuit attribute sets, one per
// (dependency, tool, reason, terminal). Past it, new combinations are
// counted under Overflow values rather than growing the metric's
// cardinality. Dependencies are capped by the registry and tools by the
// agents' declarations, so the cap is only reached by misconfiguration.
const MaxAttributeSets = 4096

// Instrumentation holds adkbreaker's instruments and cached attribute sets.
// It implements observe.Observer; Watch adds a registry's transitions and
// state gauges. It is safe for concurrent use.
type Instrumentation struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	meter   metric.Meter
	tracer  trace.Tracer
	records RecordSink // logrecords.go; nil: no log records

	shortCircuits metric.Int64Counter
	transitions   metric.Int64Counter
	turnsEnded    metric.Int64Counter
	mismatches    metric.Int64Counter
	repeats       metric.Int64Counter // repeat.go
	shadowAnn     metric.Int64Counter
	state         metric.Int64ObservableGauge
	retryAfter    metric.Float64ObservableGauge
	dropped       metric.Int64ObservableCounter
	failureRate   metric.Float64ObservableGauge
	openDuration  metric.Float64Histogram
	probes        metric.Int64Counter
	calls         metric.Int64ObservableCounter
	callDuration  metric.Float64Histogram
	cost          costInstruments // cost.go

	sc         *cache[scKey, []metric.AddOption]
	scOverflow [2][]metric.AddOption // by terminal
	turns      *cache[observe.TurnEndReason, []metric.AddOption]
	turnsOver  []metric.AddOption
	deps       *cache[registry.Key, metric.ObserveOption]
	callSets   *cache[registry.Key, *[5]metric.ObserveOption]
	durSets    *cache[callKey, metric.RecordOption]
	annSets    *cache[annKey, []metric.AddOption]
}

var _ observe.Observer = (*Instrumentation)(nil)

type scKey struct {
	dep      registry.Key
	tool     string
	reason   string
	terminal bool
	shadow   bool
}

// New creates the instruments on mp's meter and a tracer on tp, both under
// ScopeName. Both providers are required; pass the OTel noop providers to
// disable one signal. Instrument errors are returned.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Instrumentation, error) {
	var errs []error
	if mp == nil {
		errs = append(errs, errors.New("meter provider: must not be nil"))
	}
	if tp == nil {
		errs = append(errs, errors.New("tracer provider: must not be nil"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	in := &Instrumentation{
		mp:       mp,
		tp:       tp,
		meter:    mp.Meter(ScopeName),
		tracer:   tp.Tracer(ScopeName),
		sc:       newCache[scKey, []metric.AddOption](MaxAttributeSets),
		turns:    newCache[observe.TurnEndReason, []metric.AddOption](64),
		deps:     newCache[registry.Key, metric.ObserveOption](MaxAttributeSets),
		callSets: newCache[registry.Key, *[5]metric.ObserveOption](MaxAttributeSets),
		durSets:  newCache[callKey, metric.RecordOption](MaxAttributeSets),
		annSets:  newCache[annKey, []metric.AddOption](MaxAttributeSets),
	}
	m := in.meter
	var err error
	add := func(name string, e error) {
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, e))
		}
	}
	in.shortCircuits, err = m.Int64Counter(MetricShortCircuits, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls refused by a breaker without calling the dependency."))
	add(MetricShortCircuits, err)
	in.transitions, err = m.Int64Counter(MetricTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Breaker state changes."))
	add(MetricTransitions, err)
	in.turnsEnded, err = m.Int64Counter(MetricTurnsEnded, metric.WithUnit("{turn}"),
		metric.WithDescription("Agent turns ended by adkbreaker with a final answer instead of another model call."))
	add(MetricTurnsEnded, err)
	in.state, err = m.Int64ObservableGauge(MetricBreakerState, metric.WithUnit("{state}"),
		metric.WithDescription("Breaker state per dependency: 0 closed, 1 half_open, 2 open."))
	add(MetricBreakerState, err)
	in.retryAfter, err = m.Float64ObservableGauge(MetricBreakerRetryAfter, metric.WithUnit("s"),
		metric.WithDescription("Time until the breaker next admits a probe; 0 when calls are admitted now; -1 while isolated (no retry time)."))
	add(MetricBreakerRetryAfter, err)
	in.mismatches, err = m.Int64Counter(MetricOutcomeMismatches, metric.WithUnit("{call}"),
		metric.WithDescription("Failed tool calls the plugin's after-tool callback was shown as successes: a plugin registered ahead of adkbreaker rewrites tool errors."))
	add(MetricOutcomeMismatches, err)
	in.repeats, err = m.Int64Counter(MetricLoopRepeats, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls the repeated-call guard answered instead of running them: the same tool with the same arguments again in one turn (action note, or end_turn for the call that ended the turn)."))
	add(MetricLoopRepeats, err)
	in.shadowAnn, err = m.Int64Counter(MetricShadowAnnotations, metric.WithUnit("{declaration}"),
		metric.WithDescription("Tool declarations of model requests left unchanged because their breaker is in shadow mode: an enforcing breaker would have marked them unavailable (or removed them)."))
	add(MetricShadowAnnotations, err)
	in.dropped, err = m.Int64ObservableCounter(MetricTransitionsDropped, metric.WithUnit("{transition}"),
		metric.WithDescription("Transitions the registry dropped because its delivery queue was full; they are missing from adkbreaker.transitions."))
	add(MetricTransitionsDropped, err)
	in.failureRate, err = m.Float64ObservableGauge(MetricFailureRate, metric.WithUnit("1"),
		metric.WithDescription("Failures / (successes + failures) in the breaker's current window (closed) or probe round (half-open); not reported while nothing is counted."))
	add(MetricFailureRate, err)
	in.openDuration, err = m.Float64Histogram(MetricOpenDuration, metric.WithUnit("s"),
		metric.WithDescription("How long a dependency was unavailable: from the breaker leaving closed to closing again, recorded when it closes."),
		metric.WithExplicitBucketBoundaries(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400))
	add(MetricOpenDuration, err)
	in.probes, err = m.Int64Counter(MetricProbes, metric.WithUnit("{probe}"),
		metric.WithDescription("Half-open probe rounds by outcome: succeeded (closed the breaker), failed (re-opened it), lease_expired (no outcome in time; counted as failed)."))
	add(MetricProbes, err)
	in.calls, err = m.Int64ObservableCounter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool and model calls through a breaker by outcome: success, failure, excluded (counted neither way), short_circuited (refused without calling the dependency)."))
	add(MetricCalls, err)
	in.callDuration, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of guarded tool calls that reached their tool, by outcome (short-circuits never reach it)."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	add(MetricCallDuration, err)
	in.initCost(m, add)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, terminal := range []bool{false, true} {
		in.scOverflow[i] = addOpts(
			attribute.String(AttrDependency, Overflow), attribute.String(AttrTool, Overflow),
			attribute.String(AttrReason, Overflow), attribute.Bool(AttrTerminal, terminal),
			attribute.String(AttrMode, ModeEnforce))
	}
	in.turnsOver = addOpts(attribute.String(AttrReason, Overflow))
	return in, nil
}

func addOpts(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func handlePanic() {
	if r := recover(); r != nil {
		otel.Handle(fmt.Errorf("adkbreaker telemetry: %v", r))
	}
}
