package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// ScopeName is the instrumentation scope of the guard's tracer and meter:
// the same on both ADK lines (it names the package, not the adapter module).
const ScopeName = "github.com/adkbreaker/adkbreaker/mcpguard"

// Span names are "mcp.<server>.<operation>", the operation being one of
// these (see docs/telemetry.md).
const (
	// SpanOpListTools is a discovery: the handshake if needed and every
	// tools/list page, with its retries.
	SpanOpListTools = string(BoundaryListTools)
	// SpanOpCallTool is one tool call, with its reconnects and retries.
	SpanOpCallTool = string(BoundaryCallTool)
	// SpanOpConnect is one handshake (dial, initialize, initialized), a
	// child of the operation that needed it.
	SpanOpConnect = string(BoundaryConnect)
)

// Span attribute keys and the retry event. They are API: see
// docs/telemetry.md. Values come from configuration, closed sets and
// numbers; text a server sent reaches a span only through redact.Text
// (AttrCause).
const (
	AttrServer     = "adk.mcp.server"        // configured server name
	AttrOperation  = "adk.mcp.operation"     // list_tools, call_tool or connect
	AttrBreaker    = "adk.mcp.breaker"       // breaker state when the operation started: closed, half_open, open
	AttrTool       = "adk.mcp.tool"          // the tool's name on the server (call_tool)
	AttrOutcome    = "adk.mcp.outcome"       // a Class: ok, fault, timeout, protocol, refused, budget_exhausted, unavailable, cancelled
	AttrReason     = "adk.mcp.reason"        // a Reason, when the outcome is not ok
	AttrBoundary   = "adk.mcp.boundary"      // where a failed operation ended
	AttrLimit      = "adk.mcp.limit"         // the Limit that fired, if any
	AttrAttempts   = "adk.mcp.attempts"      // attempts made, the first included
	AttrRetries    = "adk.mcp.retries"       // retries made
	AttrGranted    = "adk.mcp.granted_s"     // seconds granted to the last leg
	AttrBudget     = "adk.mcp.budget_s"      // the operation budget, seconds
	AttrRetryAfter = "adk.mcp.retry_after_s" // a delay the server asked for, or the breaker's wait
	AttrCause      = "adk.mcp.cause"         // the cause, sanitised by redact.Text, at most 256 bytes
	AttrReconnect  = "adk.mcp.reconnect"     // connect: a session existed before
	AttrAttempt    = "adk.mcp.attempt"       // retry event: the attempt that failed
	AttrDelay      = "adk.mcp.delay_s"       // retry event: the wait before the next attempt
	AttrServerHint = "adk.mcp.server_hint"   // retry event: the wait is the server's Retry-After

	EventRetry = "adk.mcp.retry"
)

// maxCauseBytes bounds AttrCause.
const maxCauseBytes = 256

// WithTracerProvider records the guard's spans with tp: one span
// "mcp.<server>.<operation>" per discovery and per tool call, a child of
// the span in the caller's context (ADK's "execute_tool {tool}" for a call),
// a child span per handshake and an event per retry. Default: the global
// provider (otel.GetTracerProvider), as ADK's own spans; pass a noop
// provider to turn the spans off.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) {
		if tp == nil {
			o.errs = append(o.errs, errors.New("tracer provider: must not be nil"))
			return
		}
		o.tel.tp = tp
	})
}

// WithMeterProvider records the guard's metrics with mp: outcomes and
// retries by server, operation and class, and leg latency (see
// docs/telemetry.md). Default: the global provider (otel.GetMeterProvider);
// pass a noop provider to turn them off.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) {
		if mp == nil {
			o.errs = append(o.errs, errors.New("meter provider: must not be nil"))
			return
		}
		o.tel.mp = mp
	})
}

// telOptions are the providers set by the options above; nil means the
// global one, resolved when New runs.
type telOptions struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// serverTel is one server's tracer, instruments and precomputed attribute
// sets, so that recording an outcome allocates nothing.
type serverTel struct {
	tracer trace.Tracer
	m      *instruments
	names  [nOps]string            // span names
	sets   [nOps][nClasses]attrSet // metric attributes by operation and class
	dialed atomic.Bool             // a handshake has succeeded before: later ones are reconnects
	// secrets are values (header credentials) removed from text before it
	// reaches a span, should the server echo them (FromConfig sets them).
	secrets []string
}

// cause is e's cause as a span may carry it: without the server's
// credentials, sanitised and bounded by redact.Text.
func (st *serverTel) cause(e *Error) string {
	return redact.Text(scrub(e.Cause.Error(), st.secrets), maxCauseBytes)
}

// initTelemetry gives every server its telemetry. It returns the errors of
// instrument creation.
func (g *Guard) initTelemetry(o telOptions) error {
	tp, mp := o.tp, o.mp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := newInstruments(mp.Meter(ScopeName))
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	tracer := tp.Tracer(ScopeName)
	for _, s := range g.servers {
		st := &serverTel{tracer: tracer, m: m}
		for i, op := range opNames {
			st.names[i] = "mcp." + s.cfg.Name + "." + op
			for j, c := range classes {
				st.sets[i][j] = newAttrSet(s.cfg.Name, op, string(c))
			}
		}
		s.tel = st
	}
	return nil
}

// opTel is an operation's span and the start of its call leg.
type opTel struct {
	span     trace.Span
	legStart time.Time
}

// begin starts the operation's span, a child of the span in the caller's
// context, and makes it the parent of everything the operation does. state
// is the breaker's state as the operation starts.
func (o *op) begin(state registry.State) {
	st := o.s.tel
	if st == nil {
		return
	}
	defer handlePanic()
	ctx, span := st.tracer.Start(o.parent, st.names[opIndex(o.operation)], trace.WithSpanKind(trace.SpanKindClient))
	o.tel.span, o.parent = span, ctx
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrServer, o.s.cfg.Name),
		attribute.String(AttrOperation, string(o.operation)),
		attribute.String(AttrBreaker, state.String()),
		attribute.Float64(AttrBudget, o.s.cfg.OperationBudget.Seconds()),
	}
	if o.tool != "" {
		attrs = append(attrs, attribute.String(AttrTool, o.tool))
	}
	span.SetAttributes(attrs...)
}

// beginCall starts a tool call's span with the breaker's state read without
// locking when it is closed.
func (o *op) beginCall() {
	if o.s.tel == nil {
		return
	}
	st := registry.StateClosed
	if !o.s.br.Closed() {
		st = o.s.br.State()
	}
	o.begin(st)
}

// end counts the operation's outcome and ends its span. e is nil for an
// answer (ok, refused) and for a breaker refusal, which unavailable carries
// instead.
func (o *op) end(class Class, e *Error, unavailable *UnavailableError) {
	st := o.s.tel
	if st == nil {
		return
	}
	defer handlePanic()
	ctx := o.parent
	if set, ok := st.set(o.operation, class); ok {
		st.m.operations.Add(ctx, 1, set.add...)
	}
	span := o.tel.span
	if span == nil {
		return
	}
	o.tel.span = nil
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs,
			attribute.String(AttrOutcome, string(class)),
			attribute.Int(AttrAttempts, max(o.attempts, 1)),
			attribute.Int(AttrRetries, o.retries),
			attribute.Float64(AttrGranted, o.granted.Seconds()),
		)
		switch {
		case e != nil:
			attrs = append(attrs,
				attribute.String(AttrReason, string(e.Reason)),
				attribute.String(AttrBoundary, string(e.Boundary)))
			if e.Limit != LimitNone {
				attrs = append(attrs, attribute.String(AttrLimit, string(e.Limit)))
			}
			if e.RetryAfter > 0 {
				attrs = append(attrs, attribute.Float64(AttrRetryAfter, e.RetryAfter.Seconds()))
			}
			if e.Cause != nil {
				attrs = append(attrs, attribute.String(AttrCause, st.cause(e)))
			}
			if e.BreakerOutcome() == registry.Failure {
				// Error() is built from configuration and closed sets only.
				span.SetStatus(codes.Error, e.Error())
			}
		case unavailable != nil:
			attrs = append(attrs,
				attribute.String(AttrReason, string(unavailable.Refusal)),
				attribute.Float64(AttrRetryAfter, unavailable.RetryAfter.Seconds()))
		}
		span.SetAttributes(attrs...)
	}
	span.End()
}

// retried records a retry after e, before waiting delay: an event on the
// operation's span and the retry counter.
func (o *op) retried(e *Error, delay time.Duration) {
	st := o.s.tel
	if st == nil {
		return
	}
	defer handlePanic()
	if set, ok := st.set(o.operation, e.Class); ok {
		st.m.retries.Add(o.parent, 1, set.add...)
	}
	if span := o.tel.span; span != nil && span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.Int(AttrAttempt, o.attempts),
			attribute.String(AttrOutcome, string(e.Class)),
			attribute.String(AttrReason, string(e.Reason)),
			attribute.String(AttrBoundary, string(e.Boundary)),
			attribute.Float64(AttrGranted, e.Granted.Seconds()),
			attribute.Float64(AttrDelay, delay.Seconds()),
			attribute.Bool(AttrServerHint, e.RetryAfter > 0),
		}
		if e.Limit != LimitNone {
			attrs = append(attrs, attribute.String(AttrLimit, string(e.Limit)))
		}
		span.AddEvent(EventRetry, trace.WithAttributes(attrs...))
	}
}

// startLeg marks the start of a tools/call leg.
func (o *op) startLeg() {
	if o.s.tel != nil {
		o.tel.legStart = time.Now()
	}
}

// endLeg records the latency of the tools/call leg started by startLeg.
func (o *op) endLeg(class Class) {
	if o.s.tel == nil || o.tel.legStart.IsZero() {
		return
	}
	o.s.tel.leg(o.parent, BoundaryCallTool, class, time.Since(o.tel.legStart))
	o.tel.legStart = time.Time{}
}

// dialTraced is dial in a child span "mcp.<server>.connect", with the
// handshake leg's latency recorded.
func (c *conn) dialTraced(o *op) (sess *mcp.ClientSession, gc *guardConn, e *Error) {
	st := c.s.tel
	if st == nil {
		return c.dial(o)
	}
	start := time.Now()
	reconnect := st.dialed.Load()
	parent := o.parent
	var span trace.Span
	func() {
		defer handlePanic()
		var ctx context.Context
		ctx, span = st.tracer.Start(parent, st.names[opIndex(BoundaryConnect)], trace.WithSpanKind(trace.SpanKindClient))
		o.parent = ctx
		if span.IsRecording() {
			span.SetAttributes(
				attribute.String(AttrServer, c.s.cfg.Name),
				attribute.String(AttrOperation, SpanOpConnect),
				attribute.Bool(AttrReconnect, reconnect))
		}
	}()
	sess, gc, e = c.dial(o)
	o.parent = parent
	class := ClassOK
	if e != nil {
		class = e.Class
	} else {
		st.dialed.Store(true)
	}
	st.leg(parent, BoundaryConnect, class, time.Since(start))
	if span == nil {
		return sess, gc, e
	}
	defer handlePanic()
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String(AttrOutcome, string(class)),
			attribute.Float64(AttrGranted, o.granted.Seconds()),
		}
		if e != nil {
			attrs = append(attrs, attribute.String(AttrReason, string(e.Reason)))
			if e.Limit != LimitNone {
				attrs = append(attrs, attribute.String(AttrLimit, string(e.Limit)))
			}
			if e.Cause != nil {
				attrs = append(attrs, attribute.String(AttrCause, st.cause(e)))
			}
			if e.BreakerOutcome() == registry.Failure {
				span.SetStatus(codes.Error, e.Error())
			}
		}
		span.SetAttributes(attrs...)
	}
	span.End()
	return sess, gc, e
}

// listTraced is list with the listing's latency (all pages) recorded.
func (s *server) listTraced(o *op, sess *mcp.ClientSession, gc *guardConn) ([]*Tool, *Error) {
	if s.tel == nil {
		return s.list(o, sess, gc)
	}
	start := time.Now()
	tools, e := s.list(o, sess, gc)
	class := ClassOK
	if e != nil {
		class = e.Class
	}
	s.tel.leg(o.parent, BoundaryListTools, class, time.Since(start))
	return tools, e
}

func handlePanic() {
	if r := recover(); r != nil {
		otel.Handle(fmt.Errorf("mcpguard telemetry: %v", r))
	}
}
