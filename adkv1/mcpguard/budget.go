package mcpguard

import (
	"context"
	"sync/atomic"
	"time"
)

// op is one operation (a discovery or a tool call) and its one budget. Every
// leg — connect, each list page, each call attempt — and every backoff is
// granted only what is left of it, narrowed by the caller's own deadline.
// An op is used by one goroutine.
type op struct {
	s         *server
	parent    context.Context
	operation Boundary
	start     time.Time
	deadline  time.Time // start + budget
	attempts  int
	retries   int
	renewed   bool          // a lost session was re-established (once per operation)
	granted   time.Duration // of the last leg
	tool      string
	inv       string // the ADK invocation ID of the caller, for failure lines
	tel       opTel  // trace.go: the operation's span
}

func (s *server) newOp(parent context.Context, operation Boundary, tool string) *op {
	return s.newOpAt(parent, operation, tool, time.Now())
}

// newOpAt is newOp for an operation whose budget started at start (time
// already spent waiting on shared work counts against it).
func (s *server) newOpAt(parent context.Context, operation Boundary, tool string, start time.Time) *op {
	return &op{
		s: s, parent: parent, operation: operation, tool: tool, inv: invocationID(parent),
		start: start, deadline: start.Add(s.cfg.OperationBudget),
	}
}

// leg is a granted leg: its context, which limit bounds it, and a holder for
// a retry delay the server may ask for.
type leg struct {
	ctx      context.Context
	cancel   context.CancelFunc
	boundary Boundary
	limit    Limit
	end      time.Time // the leg's deadline
	granted  time.Duration
	hint     *hintHolder
}

// grant computes the time a leg may take, ending no later than legEnd (the
// leg's own limit), the operation's deadline and the parent's deadline. It
// returns the binding limit. With less than MinLeg left it refuses: an
// *Error of class budget_exhausted when the budget or the run's deadline is
// what ran out, or of class timeout when the leg's own limit did (a
// discovery whose pages used up DiscoveryTimeout: the server is slow).
func (o *op) grant(b Boundary, legEnd time.Time, legLimit Limit) (time.Time, time.Duration, Limit, *Error) {
	now := time.Now()
	end, limit := legEnd, legLimit
	if o.deadline.Before(end) {
		end, limit = o.deadline, LimitOperationBudget
	}
	if pd, ok := o.parent.Deadline(); ok && pd.Before(end) {
		end, limit = pd, LimitRunDeadline
	}
	d := end.Sub(now)
	if d >= o.s.cfg.MinLeg {
		return end, d, limit, nil
	}
	e := o.err(b, nil)
	e.Limit = limit
	if limit == legLimit {
		e.Class, e.Reason, e.Cause = ClassTimeout, ReasonDeadline, context.DeadlineExceeded
		e.Granted = o.granted
	} else {
		e.Class, e.Reason, e.Cause = ClassBudgetExhausted, ReasonBudgetExhausted, ErrBudgetExhausted
	}
	return time.Time{}, 0, limit, e
}

// leg grants a leg and returns its context. The caller must call l.cancel.
func (o *op) leg(b Boundary, legEnd time.Time, legLimit Limit) (leg, *Error) {
	end, d, limit, e := o.grant(b, legEnd, legLimit)
	if e != nil {
		return leg{}, e
	}
	o.granted = d
	opEnd := o.deadline
	if pd, ok := o.parent.Deadline(); ok && pd.Before(opEnd) {
		opEnd = pd
	}
	h := &hintHolder{maxBytes: o.s.cfg.MaxResultBytes, opEnd: opEnd, legEnd: end, connect: b == BoundaryConnect}
	cctx, cancelCause := context.WithCancelCause(context.WithValue(o.parent, hintKey{}, h))
	h.decline = cancelCause
	ctx, cancel := context.WithDeadline(cctx, end)
	stop := func() { cancel(); cancelCause(nil) }
	return leg{ctx: ctx, cancel: stop, boundary: b, limit: limit, end: end, granted: d, hint: h}, nil
}

// err returns an *Error for this operation at boundary b, with the
// bookkeeping fields filled in.
func (o *op) err(b Boundary, cause error) *Error {
	return &Error{
		Server: o.s.cfg.Name, Operation: o.operation, Boundary: b, Tool: o.tool,
		Budget: o.s.cfg.OperationBudget, Elapsed: time.Since(o.start),
		Attempts: max(o.attempts, 1), Cause: cause,
	}
}

// wait sleeps d unless the parent ends first. It reports false when the
// parent ended.
func (o *op) wait(d time.Duration) bool {
	if d <= 0 {
		return o.parent.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-o.parent.Done():
		return false
	}
}

// fits reports whether waiting d still leaves MinLeg for a further leg,
// within the budget and the parent's deadline.
func (o *op) fits(d time.Duration) bool {
	end := time.Now().Add(d + o.s.cfg.MinLeg)
	if end.After(o.deadline) {
		return false
	}
	if pd, ok := o.parent.Deadline(); ok && end.After(pd) {
		return false
	}
	return true
}

// hintKey carries a *hintHolder in a leg's context so that an HTTP round
// tripper (see HTTPClient) can record a server's Retry-After.
type hintKey struct{}

type hintHolder struct {
	d        atomic.Int64
	maxBytes int       // Server.MaxResultBytes, for HTTPClient's body cap
	opEnd    time.Time // the operation's deadline (budget and run), for detached writes
	legEnd   time.Time // the leg's deadline: a server's SSE retry: must fit before it
	// decline ends the leg at once with a *retryDeclined cause (see sseWatch)
	// or a *serverBusy one (HTTPClient, a connect leg).
	decline context.CancelCauseFunc
	// connect: the leg is a handshake (BoundaryConnect), in which the go-sdk
	// may send more than one request (server/discover, then initialize).
	connect bool
	// write is what became of the leg's request (a JSON-RPC call, not a
	// notification) on a guardConn: writeNone, writeFailed or writeDone. It
	// is the evidence notSent decides from.
	write atomic.Int32
	// refused: the leg's call was answered, before the server ran it, that
	// its session is unknown (HTTP 404, or 400 to a request naming a
	// session). Recorded by connObserver.
	refused atomic.Bool
	// sessionRejected: a request of the leg naming a session got HTTP 400:
	// classified as a lost session (renewed once per operation).
	sessionRejected atomic.Bool
	// auth: the HTTP status (401, 403) of a request of the leg refused for
	// authorization; 0 when none was.
	auth atomic.Int32
}

// States of hintHolder.write.
const (
	writeNone   int32 = iota // no write of the request reached the connection
	writeFailed              // the connection's Write returned an error
	writeDone                // the connection's Write returned nil: the request went out
)

// wrote records the outcome of writing the leg's request. A request that
// went out once stays written.
func (h *hintHolder) wrote(err error) {
	if err == nil {
		h.write.Store(writeDone)
		return
	}
	h.write.CompareAndSwap(writeNone, writeFailed)
}

// remaining returns the time left to the operation of the leg h belongs to.
func (h *hintHolder) remaining() time.Duration { return time.Until(h.opEnd) }

// authStatus returns the 401/403 a request of the leg got, or 0.
func (h *hintHolder) authStatus() int {
	if h == nil {
		return 0
	}
	return int(h.auth.Load())
}

func (h *hintHolder) get() time.Duration {
	if h == nil {
		return 0
	}
	return time.Duration(h.d.Load())
}

// RecordRetryAfter records a delay a server asked for (HTTP Retry-After) in
// the leg whose context ctx is, so that the retry honours it exactly (or
// does not happen). Transports other than HTTPClient may call it.
func RecordRetryAfter(ctx context.Context, d time.Duration) {
	if h, ok := ctx.Value(hintKey{}).(*hintHolder); ok && d > 0 {
		h.d.Store(int64(d))
	}
}
