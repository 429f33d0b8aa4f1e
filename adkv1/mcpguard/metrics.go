package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names and attribute keys. They are API: see docs/telemetry.md.
// Attributes are server (a configured name), operation and class (closed
// sets), so each instrument has at most servers × 3 × 8 series.
const (
	// MetricOperations counts operations by server, operation (list_tools,
	// call_tool) and outcome class.
	MetricOperations = "adkbreaker.mcp.operations"
	// MetricRetries counts retries by server, operation and the class of
	// the attempt that was retried.
	MetricRetries = "adkbreaker.mcp.retries"
	// MetricLegDuration is the latency of legs, in seconds, by server,
	// operation (the leg: connect, list_tools for all pages of a listing,
	// call_tool) and the leg's outcome class.
	MetricLegDuration = "adkbreaker.mcp.leg.duration"

	MetricAttrServer    = "server"
	MetricAttrOperation = "operation"
	MetricAttrClass     = "class"
)

// legBuckets are the leg histogram's bucket bounds, in seconds: from a
// local server's few milliseconds to a minute-long call.
var legBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type instruments struct {
	operations metric.Int64Counter
	retries    metric.Int64Counter
	legs       metric.Float64Histogram
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var (
		in   instruments
		errs []error
		err  error
	)
	add := func(name string, e error) {
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, e))
		}
	}
	in.operations, err = m.Int64Counter(MetricOperations, metric.WithUnit("{operation}"),
		metric.WithDescription("MCP operations (discoveries and tool calls) by server, operation and outcome class."))
	add(MetricOperations, err)
	in.retries, err = m.Int64Counter(MetricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries of MCP operations by server, operation and the class of the attempt retried."))
	add(MetricRetries, err)
	in.legs, err = m.Float64Histogram(MetricLegDuration, metric.WithUnit("s"),
		metric.WithDescription("Latency of MCP legs (connect, list_tools, call_tool) by server, leg and outcome class."),
		metric.WithExplicitBucketBoundaries(legBuckets...))
	add(MetricLegDuration, err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &in, nil
}

// The operations and classes attribute sets are precomputed for.
const (
	nOps     = 3
	nClasses = 9
)

var (
	opNames = [nOps]string{string(BoundaryConnect), string(BoundaryListTools), string(BoundaryCallTool)}
	classes = [nClasses]Class{ClassOK, ClassFault, ClassTimeout, ClassProtocol, ClassRefused,
		ClassBudgetExhausted, ClassUnavailable, ClassCancelled, ClassAuth}
)

func opIndex(b Boundary) int {
	switch b {
	case BoundaryListTools:
		return 1
	case BoundaryCallTool:
		return 2
	}
	return 0
}

func classIndex(c Class) (int, bool) {
	for i, x := range classes {
		if x == c {
			return i, true
		}
	}
	return 0, false
}

// attrSet is one (server, operation, class) attribute set as the options
// Add and Record take, built once.
type attrSet struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func newAttrSet(server, operation, class string) attrSet {
	o := metric.WithAttributeSet(attribute.NewSet(
		attribute.String(MetricAttrServer, server),
		attribute.String(MetricAttrOperation, operation),
		attribute.String(MetricAttrClass, class)))
	return attrSet{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// set returns the attribute set of an operation and class; false for a
// class outside the closed set (not recorded, so cardinality stays bounded).
func (st *serverTel) set(b Boundary, c Class) (attrSet, bool) {
	i, ok := classIndex(c)
	if !ok {
		return attrSet{}, false
	}
	return st.sets[opIndex(b)][i], true
}

// leg records one leg's latency.
func (st *serverTel) leg(ctx context.Context, b Boundary, c Class, d time.Duration) {
	defer handlePanic()
	if set, ok := st.set(b, c); ok {
		st.m.legs.Record(ctx, d.Seconds(), set.rec...)
	}
}
