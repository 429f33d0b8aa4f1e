package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC codes the go-sdk uses internally (internal/jsonrpc2) and ours.
const (
	codeServerOverloaded = -32000
	codeClientClosing    = -32003
	codeServerClosing    = -32004
	codeRejected         = -32005
	// codeOversized replaces a response whose result exceeded MaxResultBytes
	// (see guardConn.Read). It is in the implementation-defined server error
	// range and never sent on the wire.
	codeOversized = -32099
)

// failure turns an error from a leg into an *Error. Order matters: the
// caller's own context first (cancellation is never the server's fault),
// then our leg deadline, then the error's shape.
func (o *op) failure(l leg, err error, gc *guardConn) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	e := o.err(l.boundary, err)
	e.Granted = l.granted
	e.RetryAfter = l.hint.get()
	switch {
	case o.parent.Err() != nil:
		e.Class, e.Reason = ClassCancelled, ReasonCancelled
		if errors.Is(o.parent.Err(), context.DeadlineExceeded) {
			e.Limit = LimitRunDeadline
		}
		return e
	case l.ctx != nil && l.ctx.Err() != nil:
		if d, ok := context.Cause(l.ctx).(*retryDeclined); ok {
			// The server asked for more time than the leg had: its hint,
			// declined at once, not a timeout.
			e.Class, e.Reason, e.RetryAfter, e.Cause = ClassFault, ReasonRetryDeclined, d.wait, d
			return e
		}
		if b, ok := context.Cause(l.ctx).(*serverBusy); ok {
			// The server answered the handshake 429/503 with a delay.
			e.Class, e.Reason, e.RetryAfter, e.Cause = ClassFault, ReasonServerError, b.wait, b
			return e
		}
		if l.callerBound(o.parent) {
			// The leg could not have ended later than the caller's own
			// deadline: whichever timer fired first, the run ran out of
			// time, which is not the server's fault.
			e.Class, e.Reason, e.Limit = ClassCancelled, ReasonCancelled, LimitRunDeadline
			return e
		}
		e.Class, e.Reason, e.Limit = ClassTimeout, ReasonDeadline, l.limit
		return e
	}
	e.Class, e.Reason = classifyErr(err)
	if st := l.hint.authStatus(); st != 0 && e.Class != ClassOK {
		// 401/403, or the OAuth flow the go-sdk ran on one failed: our
		// credentials, not the server's health. Whatever error text the
		// go-sdk built (a JSON-RPC error body, a flow error, a broken
		// connection), it is an authorization failure.
		e.Class, e.Reason, e.countAuth = ClassAuth, ReasonUnauthorized, o.s.cfg.CountAuthFailures
		if st == 403 {
			e.Reason = ReasonForbidden
		}
		return e
	}
	if l.hint != nil && l.hint.sessionRejected.Load() && e.Class == ClassFault {
		// HTTP 400 to a request naming our session: the server (such as
		// one on the TypeScript SDK) does not know it. Renewed like a 404.
		e.Reason = ReasonSessionMissing
	}
	if e.Reason == ReasonOversized {
		e.Limit = LimitMaxResultBytes
	}
	if e.Class == ClassFault && gc != nil && gc.oversized.Load() {
		e.Class, e.Reason, e.Limit = ClassProtocol, ReasonOversized, LimitMaxResultBytes
	}
	if gc != nil && e.Class == ClassFault && gc.truncated.Load() {
		e.Class, e.Reason = ClassProtocol, ReasonTruncated
	}
	if e.Class == ClassProtocol {
		e.payload = gc.lastPayload(maxLogPayload)
	}
	return e
}

// callerBound reports whether the leg's deadline was the caller's: the
// parent's deadline is no later than the leg's own end. The leg's timer and
// the parent's fire independently (and the leg's usually first, by a hair),
// so the order in which they fired says nothing; the deadlines do.
func (l leg) callerBound(parent context.Context) bool {
	pd, ok := parent.Deadline()
	return ok && !l.end.IsZero() && !pd.After(l.end)
}

// classifyErr maps an error returned by the go-sdk onto a class and reason.
func classifyErr(err error) (Class, Reason) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch we.Code {
		case codeOversized:
			return ClassProtocol, ReasonOversized
		case jsonrpc.CodeInvalidParams:
			return ClassRefused, ReasonInvalidParams
		case jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidRequest:
			return ClassRefused, ReasonUnknownMethod
		case jsonrpc.CodeParseError:
			return ClassProtocol, ReasonMalformed
		case codeClientClosing, codeServerClosing:
			return ClassFault, ReasonConnectionClosed
		case codeRejected:
			// The go-sdk's HTTP transport: a transient status (429, 502-504)
			// or a request that failed in the HTTP client.
			msg := err.Error()
			switch {
			case strings.Contains(msg, "connection refused"):
				return ClassFault, ReasonConnectionRefused
			case strings.HasSuffix(msg, ": EOF"), strings.Contains(msg, "connection reset"):
				// The request went out and the connection closed under it.
				return ClassFault, ReasonConnectionClosed
			case strings.Contains(msg, "Too Many Requests"), strings.Contains(msg, "Service Unavailable"),
				strings.Contains(msg, "Bad Gateway"), strings.Contains(msg, "Gateway Timeout"):
				return ClassFault, ReasonServerError
			}
			return ClassFault, ReasonTransport
		default: // -32603 internal error, -32000 overloaded, other server errors
			return ClassFault, ReasonServerError
		}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.As(err, &typ):
		return ClassProtocol, ReasonMalformed
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassFault, ReasonConnectionRefused
	case errors.Is(err, mcp.ErrSessionMissing):
		return ClassFault, ReasonSessionMissing
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ClassFault, ReasonConnectionClosed
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ClassProtocol, ReasonTruncated
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "exceeds max_result_bytes"):
		return ClassProtocol, ReasonOversized
	case strings.Contains(msg, "unsupported protocol version"):
		return ClassProtocol, ReasonBadProtocol
	case strings.Contains(msg, "unmarshal"), strings.Contains(msg, "invalid character"),
		strings.Contains(msg, "cannot unmarshal"), strings.Contains(msg, "unknown content type"):
		return ClassProtocol, ReasonMalformed
	case strings.Contains(msg, "connection refused"):
		return ClassFault, ReasonConnectionRefused
	}
	return ClassFault, ReasonTransport
}

// notSent reports whether the request of a leg certainly never reached the
// server, so that repeating it cannot repeat a side effect. It decides from
// what became of the write (recorded in the leg's holder h by guardConn.Write),
// not from the error's identity alone: the go-sdk reports ErrSessionMissing
// and a closing connection both for a request it never sent and, through the
// read side, for one already sent and accepted (an HTTP call whose SSE stream
// dropped and whose resumption GET got 404). The request was not sent when
//   - the connection's Write failed (or was never reached: the session was
//     already closing), and
//   - the error says the session was closing or is gone (HTTP 404 to the
//     POST itself).
//
// A request whose Write succeeded is "result unknown", whatever error the
// read side then delivers. gc is nil for a caller's own Session, whose writes
// are not observed: its requests always count as sent.
func notSent(err error, h *hintHolder, gc *guardConn) bool {
	if gc == nil || h == nil || h.write.Load() == writeDone {
		return false
	}
	if h.refused.Load() {
		// Its POST was answered 404, or 400 naming the session, or its
		// connection was refused.
		return true
	}
	if gc.passthrough && h.write.Load() == writeNone {
		// The go-sdk's own HTTP connection, whose every request is seen
		// (connObserver): no POST of the call was made at all (the
		// connection had already failed).
		return true
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code == codeClientClosing {
		return true
	}
	// The go-sdk wraps jsonrpc2.ErrClientClosing with %v into
	// ErrConnectionClosed, so only its text survives.
	return errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing")
}
