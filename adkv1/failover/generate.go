package failover

import (
	"context"
	"errors"
	"log/slog"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/retryafter"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Response metadata keys (LLMResponse.CustomMetadata) and span attribute
// keys. They are API: dashboards and tests read them.
const (
	// AttrEndpoint is the key of the endpoint that answered.
	AttrEndpoint = "adkbreaker.model.endpoint"
	// AttrEndpointModel is the model name sent to that endpoint.
	AttrEndpointModel = "adkbreaker.model.endpoint_model"
	// AttrFailoverFrom is the key of the first endpoint the call left (the
	// one it would have used); present only when a failover happened.
	AttrFailoverFrom = "adkbreaker.model.failover_from"
	// AttrFailoverReason is why the call left AttrFailoverFrom.
	AttrFailoverReason = "adkbreaker.model.failover_reason"
	// AttrFailovers is how many endpoints the call left (span only).
	AttrFailovers = "adkbreaker.model.failovers"
	// AttrMidstreamError is true when the answering endpoint failed after
	// its first chunk; the error was yielded, not failed over (span only).
	AttrMidstreamError = "adkbreaker.model.midstream_error"
	// AttrUnavailable is true when no endpoint could answer.
	AttrUnavailable = "adkbreaker.model.unavailable"
	// EventFailover is the span event added for every failover hop, with
	// attributes from, to, reason and retry_after_s.
	EventFailover = "adkbreaker.model.failover"
)

// errTimeout is the cancellation cause of an endpoint's own Timeout.
var errTimeout = errors.New("failover: endpoint timeout")

// chain is the state of one GenerateContent call across endpoints.
type chain struct {
	from       int // index of the first endpoint left; -1 for none
	fromReason Reason
	hops       int
	attempts   []Attempt // allocated only on the failover path
}

func (m *Model) generate(ctx context.Context, req *model.LLMRequest, stream bool, yield func(*model.LLMResponse, error) bool) {
	if req == nil {
		req = &model.LLMRequest{}
	}
	c := chain{from: -1}
	for i := range m.eps {
		ep := &m.eps[i]
		if ep.Timeout > 0 && ep.abandoned.Load() >= int64(ep.MaxAbandoned) {
			// Its earlier calls still hang past their Timeout: do not add one.
			m.leave(ctx, &c, ep, ReasonTimeout, max(ep.Timeout, ep.br.RetryAfter()), nil)
			continue
		}
		if ep.thr != nil && ep.br.Closed() && m.nextAvailable(i) && !ep.thr.Admit(m.clock.Now()) {
			// Shed: straight to the next endpoint, not a failure of this one.
			m.countShed(ctx, ep)
			m.leave(ctx, &c, ep, ReasonThrottled, 0, nil)
			continue
		}
		res, d := ep.br.Reserve()
		if !d.Allowed {
			if ep.thr != nil && d.State != registry.StateClosed {
				// Opened since: not a request the endpoint saw.
				ep.thr.Unsend(m.clock.Now())
			}
			r, wait := m.refused(ep, d)
			m.leave(ctx, &c, ep, r, wait, nil)
			continue
		}
		out := m.attempt(ctx, &c, ep, res, req, stream, yield)
		if ep.thr != nil {
			ep.thr.Answered(m.clock.Now(), out.refused)
		}
		if ep.exh != nil && !out.refused && out.done && ep.exh.Active() {
			ep.exh.Accept(m.clock.Now())
		}
		if out.done {
			return
		}
		m.leave(ctx, &c, ep, out.reason, out.wait, out.err)
	}
	m.exhausted(ctx, &c, yield)
}

type attemptOut struct {
	done    bool // the call ended on this endpoint (answered, or an error was yielded)
	refused bool // the endpoint refused the call for its rate (429): the throttle's signal
	reason  Reason
	wait    time.Duration
	err     error
}

// attempt calls one admitted endpoint. Its state lives in the call (one
// allocation) rather than in a range-over-func loop, whose body closure
// would move every captured variable to the heap.
func (m *Model) attempt(ctx context.Context, c *chain, ep *endpoint, res registry.Reservation, req *model.LLMRequest, stream bool, yield func(*model.LLMResponse, error) bool) attemptOut {
	m.pending.Add(1)
	cl := newCall(ctx, req, ep.ModelName)
	cl.m, cl.ep, cl.res, cl.caller, cl.actx, cl.yield = m, ep, res, ctx, ctx, yield
	cl.from, cl.fromReason, cl.hops = c.from, c.fromReason, c.hops
	cl.began = m.clock.Now()
	defer cl.settle()
	cl.stall.first, cl.stall.idle = stallDeadlines(&ep.Endpoint)
	if ep.Timeout > 0 || cl.stall.on() {
		tctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		cl.cancel = cancel
		cl.actx = tctx
		cl.ctx.Context = tctx
		if ep.Timeout > 0 {
			timer := m.timeoutAfter(ep.Timeout, func() { cancel(errTimeout) })
			defer timer.Stop()
			cl.timer = timer
		}
		if cl.stall.on() {
			cl.startStall()
			defer cl.stopStall()
		}
	}
	cl.probeStarted()
	if ep.Timeout > 0 {
		m.runBounded(cl, ep, stream)
	} else {
		ep.LLM.GenerateContent(&cl.ctx, &cl.req, stream)(cl.item)
	}
	if err := cl.ourCut(); err != nil {
		// Our deadline cut the call and the endpoint ended without saying
		// so (genai ends a stream silently when its read fails).
		cl.item(nil, err)
	}
	cl.report(registry.Success, 0) // the endpoint finished without an error (no-op once reported)
	cl.out.done = !cl.out.failover
	return cl.out.attemptOut
}

// item handles one (response, error) pair the endpoint yields.
func (cl *call) item(resp *model.LLMResponse, err error) bool {
	if cl.stopped {
		return false // an endpoint that ignored our false: never yield twice
	}
	ok := cl.handle(resp, err)
	cl.stopped = !ok
	return ok
}

func (cl *call) handle(resp *model.LLMResponse, err error) bool {
	m, ep := cl.m, cl.ep
	resp, err = cl.stallItem(resp, err)
	if cl.timer != nil && (err != nil || resp != nil) {
		// Our Timeout bounds the wait for the answer or the first chunk (or
		// error); a stream that has started runs under the caller's
		// deadline. The timer is stopped once, by the first item that is
		// not an empty one.
		fired := !cl.timer.Stop()
		cl.timer = nil
		if fired {
			// The timer fired before this item reached us: the endpoint's
			// context is cancelled, or being cancelled by the timer's
			// goroutine. Finish that cancellation here (a no-op if it is
			// done; the first cause wins) so judge sees the cause for
			// certain, and turn a first chunk into the timeout it is:
			// yielding it would start a stream our own cancellation then
			// cuts, a mid-stream error the caller could not fail over from.
			cl.cancel(errTimeout)
			if err == nil {
				err = context.Cause(cl.actx) // errTimeout, or the caller's cause if it came first
			}
		}
	}
	if err != nil {
		v := m.judge(cl.caller, cl.actx, cl, err)
		now := m.clock.Now()
		hold := m.holdFor(cl.caller, ep, v, now)
		cl.out.refused = v.Outcome == registry.Failure && (v.Reason == ReasonRateLimited || v.Reason == ReasonQuotaExhausted)
		switch {
		case hold > 0 && v.Reason == ReasonQuotaExhausted:
			// Open the endpoint's breaker until the quota resets, first, so
			// the quota sets the hold and the cause even when this failure
			// would also cross the threshold or fail a probe. Trip counts
			// the failure; the attempt's own report then lands in the old
			// generation (or on a claimed probe) and is ignored. A call
			// admitted before an operator's Reset trips nothing.
			cl.res.Trip(hold, registry.CauseQuotaExhausted)
			cl.report(v.Outcome, 0)
		case ep.exh != nil && v.Outcome == registry.Failure && v.Reason == ReasonRateLimited:
			// A rate-limit refusal is the exhaustion detector's business,
			// not the failure counts': counted there, a partial storm
			// refusing a third or half of the calls would open the breaker
			// by chance or by its failure rate, and demote every user to
			// the fallback for the hint. A refused probe re-opens for the
			// hint (at least OpenFor), without the hold growing on every
			// failed probe: under a partial storm a probe is a coin toss.
			// The hint stays a floor for a hold that opens otherwise.
			if cl.res.Probe() || ep.exh.Refuse(now) {
				r := v.Reason
				ep.hintReason.Store(&r)
				cl.res.Trip(max(hold, ep.br.Policy().OpenFor), registry.CauseRetryHint)
			}
			cl.report(registry.Excluded, hold)
		case hold > 0:
			// A server's retry hint: by default (DefaultPolicy, and the
			// registry's) a floor for the hold, opening the breaker for it
			// only after RetryHintFailures failures in a row (a hinted 5xx;
			// a 429 goes to the exhaustion check above); the registry opens
			// it at once only when the policy opts in to TripOnRetryHint.
			r := v.Reason
			ep.hintReason.Store(&r)
			cl.report(v.Outcome, hold)
		default:
			cl.report(v.Outcome, v.RetryAfter)
		}
		if !cl.yielded && v.Failover {
			cl.out.failover = true
			cl.out.attemptOut = attemptOut{reason: v.Reason, wait: max(hold, ep.br.RetryAfter()), err: err, refused: cl.out.refused}
			return false
		}
		if cl.yielded {
			m.midstream(cl.caller, ep, v)
		} else {
			m.annotate(cl.caller, cl, ep)
		}
		cl.yield(nil, err) // as it is: never a silent switch after a chunk
		return false
	}
	if resp == nil {
		return true
	}
	if !resp.Partial {
		// A complete answer: the endpoint did its job, whatever the consumer
		// does next (reporting now also keeps the consumer's processing time
		// out of probe leases and slow-call timing).
		cl.report(registry.Success, 0)
	}
	if !cl.yielded {
		cl.yielded = true
		m.annotate(cl.caller, cl, ep)
	}
	m.mark(resp, cl, ep)
	cl.inYield = true
	ok := cl.yield(resp, nil)
	cl.inYield = false
	if !ok {
		// The consumer stopped. After partial chunks only, that says nothing
		// about the endpoint.
		cl.report(registry.Excluded, 0)
		return false
	}
	cl.rearmStall()
	return true
}

// report reports the attempt's outcome exactly once.
func (cl *call) report(o registry.Outcome, hint time.Duration) {
	if cl.reported {
		return
	}
	cl.reported = true
	cl.probeDone()
	if o == registry.Success {
		// The endpoint's healthy latency, admission to answer: how long a
		// probe of it is expected to take (Breaker.ObserveLatency).
		cl.ep.br.ObserveLatency(cl.m.clock.Now().Sub(cl.began))
	}
	cl.res.Report(o, hint)
	cl.m.pending.Add(-1)
}

// settle runs on every exit. An attempt still unreported here is unwinding
// from a panic (or runtime.Goexit): the consumer's, while we were yielding to
// it (not the endpoint's fault), or the endpoint's own.
func (cl *call) settle() {
	if cl.reported {
		return
	}
	if cl.inYield {
		cl.report(registry.Excluded, 0)
	} else {
		cl.report(registry.Failure, 0)
	}
}

// judge classifies an endpoint error. The caller's own cancellation or
// deadline is never the endpoint's fault; our Timeout always is.
func (m *Model) judge(ctx, actx context.Context, cl *call, err error) Verdict {
	if ctx.Err() != nil {
		return Verdict{Outcome: registry.Excluded}
	}
	if actx != ctx && context.Cause(actx) == errTimeout {
		return cl.cutVerdict(ReasonTimeout)
	}
	if cl.stall.fired.Load() {
		return cl.cutVerdict(ReasonStall)
	}
	var v Verdict
	ok := false
	if m.classify != nil {
		v, ok = m.classify(err)
	}
	if !ok {
		v = Classify(err)
	}
	if v.Outcome == registry.Failure {
		// Retry-After, via RetryAfterTransport: the last response's only. A
		// 429 the client retried into a 500 is that 500's verdict, without
		// the 429's hint.
		v.RetryAfter = max(v.RetryAfter, cl.hint.Load().Hint)
	}
	return v
}

// cutVerdict is the verdict of a call our deadline cut (reason: timeout or
// stall). The cut counts as the server's hinted refusal — a 429 is
// rate_limited, a 503 server_error, with the hint — only when the client was
// sleeping that hint out: the last HTTP response of the call
// (RetryAfterTransport saw it) carried the hint, no request was sent since,
// the hint had not passed when the cut came, and nothing was yielded. A
// client that retries by itself (openai-go, by default) then hides the
// server's answer behind our context error. A retry that was sent and then
// hung or stalled, or a later response, is the endpoint's own timeout or
// stall.
func (cl *call) cutVerdict(r Reason) Verdict {
	if last := cl.hint.Load(); !cl.yielded && last.Sleeping(time.Now()) {
		if v := apiVerdict(genai.APIError{Code: last.Status}); v.Outcome == registry.Failure {
			v.RetryAfter = max(v.RetryAfter, last.Hint)
			return v
		}
	}
	return Verdict{Outcome: registry.Failure, Failover: true, Reason: r}
}

// holdFor returns how long to hold ep after a failure: until the daily
// quota resets, or for the server's retry hint; capped by the breaker's
// MaxRetryHint. A server's hint above the cap is logged, once per endpoint,
// with the server's value.
func (m *Model) holdFor(ctx context.Context, ep *endpoint, v Verdict, now time.Time) time.Duration {
	if v.Outcome != registry.Failure {
		return 0
	}
	limit := ep.br.Policy().MaxRetryHint
	if v.RetryAfter > limit && ep.cappedHint.CompareAndSwap(false, true) {
		m.log.LogAttrs(ctx, slog.LevelWarn, "adkbreaker: server retry hint exceeds max_retry_hint; the endpoint is held for the cap at most (logged once per endpoint)",
			slog.String("model", m.name), slog.String("endpoint", string(ep.Key)),
			slog.Duration("hint", v.RetryAfter), slog.Duration("max_retry_hint", limit), slog.String("reason", string(v.Reason.closed())))
	}
	var d time.Duration
	switch {
	case v.Reason == ReasonQuotaExhausted:
		d = max(untilMidnight(now, m.quotaLoc), v.RetryAfter)
	case v.RetryAfter > 0:
		d = v.RetryAfter
	default:
		return 0
	}
	return min(d, limit)
}

// nextAvailable reports whether an endpoint after the i-th may be called
// now: the throttle sheds a call only to somewhere that can take it.
func (m *Model) nextAvailable(i int) bool {
	for j := i + 1; j < len(m.eps); j++ {
		ep := &m.eps[j]
		if ep.Timeout > 0 && ep.abandoned.Load() >= int64(ep.MaxAbandoned) {
			continue
		}
		if ep.br.Closed() || ep.br.RetryAfter() == 0 {
			return true
		}
	}
	return false
}

// untilMidnight is the time from now to the next midnight in loc.
func untilMidnight(now time.Time, loc *time.Location) time.Duration {
	t := now.In(loc)
	next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
	return next.Sub(now)
}

// leave records that the call is leaving ep for the next endpoint, and says
// so: a log line (rate-limited), a span event and the failover hook.
func (m *Model) leave(ctx context.Context, c *chain, ep *endpoint, r Reason, wait time.Duration, err error) {
	if c.from < 0 {
		c.from, c.fromReason = ep.idx, r
	}
	c.hops++
	c.attempts = append(c.attempts, Attempt{Endpoint: ep.Key, Model: ep.ModelName, Reason: r, RetryAfter: wait, Err: err})
	ev := Event{Model: m.name, From: ep.Key, FromModel: ep.ModelName, Reason: r, RetryAfter: wait, Err: err, At: m.clock.Now()}
	if ep.idx+1 < len(m.eps) {
		to := &m.eps[ep.idx+1]
		ev.To, ev.ToModel = to.Key, to.ModelName
		if ok, suppressed := m.logs.Allow(limKey{a: string(ev.From), b: string(ev.To), r: string(r)}.String(), ev.At); ok {
			attrs := []slog.Attr{
				slog.String("model", m.name), slog.String("from", string(ev.From)), slog.String("to", string(ev.To)),
				slog.String("reason", string(r)), slog.Duration("retry_after", wait),
				slog.String("from_model", ev.FromModel), slog.String("to_model", ev.ToModel),
			}
			if suppressed > 0 {
				attrs = append(attrs, slog.Int("suppressed", suppressed))
			}
			if err != nil {
				attrs = append(attrs, slog.String("error", truncate(err.Error(), 300)))
			}
			m.log.LogAttrs(ctx, slog.LevelWarn, "adkbreaker: model failover", attrs...)
		}
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventFailover, trace.WithAttributes(
			attribute.String("from", string(ev.From)), attribute.String("to", string(ev.To)),
			attribute.String("reason", string(r)), attribute.Float64("retry_after_s", wait.Seconds()),
		))
	}
	m.countFailover(ctx, ev)
	if m.onEvent != nil {
		m.onEvent(ctx, ev)
	}
}

// exhausted ends a call no endpoint answered.
func (m *Model) exhausted(ctx context.Context, c *chain, yield func(*model.LLMResponse, error) bool) {
	// Each endpoint may be tried again once its breaker admits calls and
	// the retry hint it answered this call with, if any, has passed: on
	// the first turn of an outage the breakers are still closed, but the
	// servers said when to come back.
	first := time.Duration(-1)
	for i := range m.eps {
		w := m.eps[i].wait(m.clock)
		for _, a := range c.attempts {
			if a.Endpoint == m.eps[i].Key {
				w = max(w, a.RetryAfter)
			}
		}
		if first < 0 || w < first {
			first = w
		}
	}
	e := &Error{Model: m.name, Attempts: c.attempts, RetryAfter: max(first, 0)}
	now := m.clock.Now()
	if ok, suppressed := m.logs.Allow(limKey{a: m.name, r: "exhausted"}.String(), now); ok {
		attrs := []slog.Attr{
			slog.String("model", m.name), slog.String("first_reason", string(c.fromReason)),
			slog.Duration("retry_after", e.RetryAfter), slog.Int("endpoints", len(m.eps)),
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int("suppressed", suppressed))
		}
		m.log.LogAttrs(ctx, slog.LevelError, "adkbreaker: no model endpoint could answer", attrs...)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.Bool(AttrUnavailable, true), attribute.Int(AttrFailovers, c.hops))
		if c.from >= 0 {
			span.SetAttributes(attribute.String(AttrFailoverFrom, string(m.eps[c.from].Key)),
				attribute.String(AttrFailoverReason, string(c.fromReason)))
		}
	}
	if !m.answer {
		yield(nil, e)
		return
	}
	resp := &model.LLMResponse{
		Content:      genai.NewContentFromText(degrade.ModelUnavailableMessage(e.RetryAfter), genai.RoleModel),
		TurnComplete: true,
		FinishReason: genai.FinishReasonStop,
	}
	if !m.noMeta {
		resp.CustomMetadata = map[string]any{AttrUnavailable: true}
		if c.from >= 0 {
			resp.CustomMetadata[AttrFailoverFrom] = m.eps[c.from].keyAny
			resp.CustomMetadata[AttrFailoverReason] = c.fromReason.boxed()
		}
	}
	yield(resp, nil)
}

// annotate sets the answering endpoint (and the failover, if any) on the
// span current in ctx: ADK's "generate_content {name}" span.
func (m *Model) annotate(ctx context.Context, c *call, ep *endpoint) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String(AttrEndpoint, string(ep.Key)), attribute.String(AttrEndpointModel, ep.ModelName))
	if c.from >= 0 {
		span.SetAttributes(attribute.String(AttrFailoverFrom, string(m.eps[c.from].Key)),
			attribute.String(AttrFailoverReason, string(c.fromReason)), attribute.Int(AttrFailovers, c.hops))
	}
}

// midstream says, loudly, that a stream failed after its first chunk and
// the error goes to the caller as it is.
func (m *Model) midstream(ctx context.Context, ep *endpoint, v Verdict) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.Bool(AttrMidstreamError, true))
	}
	now := m.clock.Now()
	if ok, suppressed := m.logs.Allow(limKey{a: string(ep.Key), r: "midstream"}.String(), now); ok {
		m.log.LogAttrs(ctx, slog.LevelWarn, "adkbreaker: model stream failed after its first chunk; not failing over",
			slog.String("model", m.name), slog.String("endpoint", string(ep.Key)),
			slog.String("outcome", v.Outcome.String()), slog.String("reason", string(v.Reason)),
			slog.Int("suppressed", suppressed))
	}
}

// mark writes the answering endpoint and the failover into the response's
// CustomMetadata. Existing keys are kept; the map is copied, never written
// in place, because an endpoint may hand out a shared one.
func (m *Model) mark(resp *model.LLMResponse, c *call, ep *endpoint) {
	if m.noMeta {
		return
	}
	n := 2
	if c.from >= 0 {
		n = 4
	}
	md := make(map[string]any, len(resp.CustomMetadata)+n)
	for k, v := range resp.CustomMetadata {
		md[k] = v
	}
	setAbsent(md, AttrEndpoint, ep.keyAny)
	setAbsent(md, AttrEndpointModel, ep.modelAny)
	if c.from >= 0 {
		setAbsent(md, AttrFailoverFrom, m.eps[c.from].keyAny)
		setAbsent(md, AttrFailoverReason, c.fromReason.boxed())
	}
	resp.CustomMetadata = md
}

func setAbsent(md map[string]any, k string, v any) {
	if _, ok := md[k]; !ok {
		md[k] = v
	}
}

// truncate shortens s to at most n bytes on a rune boundary, for logs.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// call is one attempt's private copy of the request, and the context the
// endpoint gets. One allocation: model/gemini mutates the request it is
// given (appends to Contents, sets Config.HTTPOptions headers) and genai
// mutates the config, so every attempt needs its own.
type call struct {
	ctx  attemptCtx
	hint retryafter.Holder
	req  model.LLMRequest
	cfg  genai.GenerateContentConfig
	buf  [8]*genai.Content

	stall stallWatch
	probe bool      // a half-open probe whose deadline is in ep.probeDue
	began time.Time // when the endpoint admitted the call (registry clock)

	// The attempt's state.
	m            *Model
	ep           *endpoint
	res          registry.Reservation
	caller, actx context.Context // the caller's context; ours (with Timeout)
	yield        func(*model.LLMResponse, error) bool
	timer        stallTimer              // the Timeout's, until the first item stops it
	cancel       context.CancelCauseFunc // actx's, with a Timeout
	from         int                     // the chain so far: first endpoint left, why, how many
	fromReason   Reason
	hops         int
	reported     bool
	inYield      bool
	yielded      bool
	stopped      bool
	out          struct {
		attemptOut
		failover bool
	}
}

func newCall(ctx context.Context, req *model.LLMRequest, modelName string) *call {
	cl := &call{}
	cl.ctx = attemptCtx{Context: ctx, hint: &cl.hint}
	cl.req = model.LLMRequest{Model: modelName, Tools: req.Tools}
	switch n := len(req.Contents); {
	case req.Contents == nil:
	case n <= len(cl.buf):
		cl.req.Contents = append(cl.buf[:0], req.Contents...)
	default:
		cl.req.Contents = append(make([]*genai.Content, 0, n+1), req.Contents...)
	}
	if req.Config != nil {
		cl.cfg = *req.Config
		if o := req.Config.HTTPOptions; o != nil {
			// Rarely set (ADK clones the agent's config, whose HTTPOptions
			// is usually nil), so copied on demand: model/gemini sets its
			// headers here.
			h := *o
			h.Headers = o.Headers.Clone()
			cl.cfg.HTTPOptions = &h
		}
		cl.req.Config = &cl.cfg
	}
	return cl
}

// attemptCtx is the caller's context plus the attempt's Retry-After holder,
// without an allocation of its own (it lives in the call).
type attemptCtx struct {
	context.Context
	hint *retryafter.Holder
}

func (c *attemptCtx) Value(key any) any {
	if key == (retryafter.HolderKey{}) {
		return c.hint
	}
	return c.Context.Value(key)
}
