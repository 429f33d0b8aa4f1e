package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

var _ observe.CallObserver = (*Instrumentation)(nil)

type callKey struct {
	dep     registry.Key
	outcome registry.Outcome
}

// CallEnded records a guarded call's duration in adkbreaker.call.duration
// (dependency, outcome). The attribute set is cached per (dependency,
// outcome): no allocation once warm.
func (in *Instrumentation) CallEnded(ctx context.Context, ev observe.CallEvent) {
	if in == nil {
		return
	}
	defer handlePanic()
	k := callKey{dep: ev.Dependency, outcome: ev.Outcome}
	opt, ok := in.durSets.get(k, mkDurationSet)
	if !ok {
		opt = mkDurationSet(callKey{dep: Overflow, outcome: ev.Outcome})
	}
	in.callDuration.Record(ctx, ev.Duration.Seconds(), opt)
}

func mkDurationSet(k callKey) metric.RecordOption {
	return metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrDependency, string(k.dep)), attribute.String(AttrOutcome, k.outcome.String())))
}
