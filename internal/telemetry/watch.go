package telemetry

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Watch subscribes to reg's transitions and registers the state gauges for
// reg's dependencies. Each transition increments adkbreaker.transitions and
// is recorded as a short root span "adkbreaker.transition" on the tracer
// provider. stop unsubscribes and unregisters the gauges; it is idempotent.
//
// Watching the same registry twice through the same meter provider (two
// plugins sharing one registry, say) counts each transition once: the
// metric side is shared per (registry, meter provider) and the span side
// per (registry, tracer provider), reference-counted, until the last stop.
func (in *Instrumentation) Watch(reg *registry.Registry) (stop func()) {
	if in == nil || reg == nil {
		return func() {}
	}
	releaseM := acquire(metricWatch{reg: reg, mp: in.mp}, func() func() { return in.watchMetrics(reg) })
	releaseT := acquire(traceWatch{reg: reg, tp: in.tp}, func() func() { return in.watchSpans(reg) })
	var once sync.Once
	return func() {
		once.Do(func() {
			releaseM()
			releaseT()
		})
	}
}

func (in *Instrumentation) watchMetrics(reg *registry.Registry) (stop func()) {
	// unavailableSince is when each dependency left closed; transitions are
	// delivered in order on one goroutine, so it needs no lock.
	unavailableSince := map[registry.Key]time.Time{}
	unsub := reg.Subscribe(func(t registry.Transition) {
		defer handlePanic()
		ctx := context.Background()
		in.transitions.Add(ctx, 1, metric.WithAttributes(
			attribute.String(AttrDependency, string(t.Key)),
			attribute.String(AttrFrom, t.From.String()),
			attribute.String(AttrTo, t.To.String()),
			attribute.String(AttrCause, t.Cause.String()),
		))
		if outcome := probeOutcome(t.Cause); outcome != "" {
			in.probes.Add(ctx, 1, metric.WithAttributes(
				attribute.String(AttrDependency, string(t.Key)), attribute.String(AttrOutcome, outcome)))
		}
		switch {
		case t.From == registry.StateClosed:
			unavailableSince[t.Key] = t.At
		case t.To == registry.StateClosed:
			if since, ok := unavailableSince[t.Key]; ok {
				delete(unavailableSince, t.Key)
				if !since.IsZero() && !t.At.IsZero() {
					in.openDuration.Record(ctx, max(0, t.At.Sub(since).Seconds()), metric.WithAttributes(
						attribute.String(AttrDependency, string(t.Key))))
				}
			}
		}
	})
	cb := func(_ context.Context, o metric.Observer) error {
		defer handlePanic()
		for _, st := range reg.Snapshot() {
			opt, ok := in.deps.get(st.Key, mkDepSet)
			if !ok {
				opt = mkDepSet(st.Key)
			}
			o.ObserveInt64(in.state, int64(st.State), opt)
			o.ObserveFloat64(in.retryAfter, registry.RetrySeconds(st.RetryAfter), opt)
			sets, ok := in.callSets.get(st.Key, mkCallSets)
			if !ok {
				sets = mkCallSets(st.Key)
			}
			if b, ok := reg.Lookup(st.Key); ok {
				for i, v := range b.Reported() {
					o.ObserveInt64(in.calls, int64(v), sets[i])
				}
				// Bulkhead refusals are short-circuits to the breaker; the
				// dashboard tells them apart (a full bulkhead is not an open
				// breaker).
				rejected := min(b.ContainCounts().Saturated, st.Counts.ShortCircuits)
				o.ObserveInt64(in.calls, int64(st.Counts.ShortCircuits-rejected), sets[3])
				o.ObserveInt64(in.calls, int64(rejected), sets[4])
			}
			if n := st.Counts.Successes + st.Counts.Failures; n > 0 {
				o.ObserveFloat64(in.failureRate, float64(st.Counts.Failures)/float64(n), opt)
			}
		}
		o.ObserveInt64(in.dropped, int64(reg.DroppedTransitions()))
		return nil
	}
	r, err := in.meter.RegisterCallback(cb, in.state, in.retryAfter, in.dropped, in.failureRate, in.calls)
	if err != nil {
		otel.Handle(fmt.Errorf("adkbreaker telemetry: register gauges: %w", err))
	}
	return func() {
		unsub()
		if r != nil {
			if err := r.Unregister(); err != nil {
				otel.Handle(fmt.Errorf("adkbreaker telemetry: unregister gauges: %w", err))
			}
		}
	}
}

// probeOutcome names the outcome of a probe round that ended with cause c,
// or "" when c does not end one.
func probeOutcome(c registry.Cause) string {
	switch c {
	case registry.CauseProbeSucceeded:
		return "succeeded"
	case registry.CauseProbeFailed:
		return "failed"
	case registry.CauseLeaseExpired:
		return "lease_expired"
	}
	return ""
}

// callOutcomes are the outcome values of adkbreaker.calls: indexed like
// registry.Breaker.Reported, then short_circuited (refused by the breaker)
// and rejected (refused by the bulkhead).
var callOutcomes = [5]string{"success", "failure", "excluded", "short_circuited", "rejected"}

func mkCallSets(k registry.Key) *[5]metric.ObserveOption {
	var out [5]metric.ObserveOption
	for i, o := range callOutcomes {
		out[i] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrDependency, string(k)), attribute.String(AttrOutcome, o)))
	}
	return &out
}

func mkDepSet(k registry.Key) metric.ObserveOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrDependency, string(k))))
}

func (in *Instrumentation) watchSpans(reg *registry.Registry) (stop func()) {
	return reg.Subscribe(func(t registry.Transition) {
		defer handlePanic()
		attrs := []attribute.KeyValue{
			attribute.String(SpanDependency, string(t.Key)),
			attribute.String(SpanFrom, t.From.String()),
			attribute.String(SpanTo, t.To.String()),
			attribute.String(SpanCause, t.Cause.String()),
			attribute.Int64(SpanSeq, int64(t.Seq)),
		}
		if t.To == registry.StateOpen {
			attrs = append(attrs, attribute.Float64(SpanRetryAfter, registry.RetrySeconds(t.RetryAfter)))
		}
		opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
		if !t.At.IsZero() {
			opts = append(opts, trace.WithTimestamp(t.At))
		}
		_, span := in.tracer.Start(context.Background(), SpanTransition, opts...)
		if t.At.IsZero() {
			span.End()
		} else {
			span.End(trace.WithTimestamp(t.At))
		}
	})
}

type metricWatch struct {
	reg *registry.Registry
	mp  metric.MeterProvider
}

type traceWatch struct {
	reg *registry.Registry
	tp  trace.TracerProvider
}

// watches reference-counts live watches so that one registry observed
// through one provider is counted once, however many plugins share it.
var watches = struct {
	mu sync.Mutex
	m  map[any]*watchRef
}{m: map[any]*watchRef{}}

type watchRef struct {
	refs int
	stop func()
}

// acquire starts the watch for key unless one is live, and returns its
// release. Keys whose provider is not comparable are never shared.
func acquire(key any, start func() func()) (release func()) {
	if !isComparable(key) {
		return start()
	}
	watches.mu.Lock()
	defer watches.mu.Unlock()
	w, ok := watches.m[key]
	if !ok {
		w = &watchRef{stop: start()}
		watches.m[key] = w
	}
	w.refs++
	return func() {
		watches.mu.Lock()
		w.refs--
		last := w.refs == 0
		if last {
			delete(watches.m, key)
		}
		watches.mu.Unlock()
		if last {
			w.stop()
		}
	}
}

// isComparable reports whether v may be used as a map key: a provider
// holding a slice, map or func (directly or in an interface field) may not.
func isComparable(v any) bool { return reflect.ValueOf(v).Comparable() }
