package mcpguard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// observedClient returns the HTTP client of one streamable HTTP connection
// that the go-sdk drives itself (see guardTransport.Connect): base wrapped
// by HTTPClient (unless it already is) and by a connObserver for gc. What a
// guardConn does on the messages of a stream connection is done here, on
// the requests that carry them, so that the go-sdk keeps every hook of its
// own connection (the MCP-Protocol-Version header on every request after
// the handshake, the standalone SSE stream, server-to-client requests and
// tools/list_changed, session handling).
func observedClient(base *http.Client, gc *guardConn) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	rt := c.Transport
	if _, ok := rt.(*roundTripper); !ok {
		rt = HTTPClient(&c).Transport
	}
	c.Transport = &connObserver{inner: rt, gc: gc}
	return &c
}

// connObserver is the per-connection layer under the go-sdk's streamable
// HTTP connection. It
//   - records, in the leg of a tools/call (or any call), whether its POST
//     went out (a 2xx answer) or was refused before the server ran it
//     (404, or 400 to a request naming a session: the server does not know
//     the session), the evidence notSent decides from;
//   - notes an authorization failure (401/403) in the leg, so that it is
//     classified as such, not as a transport fault;
//   - bounds requests made under a context without a deadline by the
//     arrival of their response headers (the body may stream on: the
//     standalone SSE stream, subscriptions/listen): during the handshake by
//     the connect leg, a courtesy notice of an operation by what is left of
//     it (at most detachedWriteBound), other POSTs by writeBound;
//   - notices a response body cut off mid-way (truncated) or over the cap
//     (oversized), and keeps a bounded prefix of the last body for logs.
type connObserver struct {
	inner http.RoundTripper
	gc    *guardConn
}

// CloseIdleConnections forwards to the inner transport, so that
// http.Client.CloseIdleConnections reaches the caller's transport.
func (o *connObserver) CloseIdleConnections() { closeIdle(o.inner) }

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

var errCourtesyDropped = errors.New("mcpguard: the operation is over; courtesy notice not sent")

func (o *connObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	h, _ := ctx.Value(hintKey{}).(*hintHolder)
	dl, hasDL := ctx.Deadline()
	// A leg's own request runs under the leg's context. Requests the
	// go-sdk makes under its connection's context (the standalone stream,
	// answers to the server's requests) may carry the values of the
	// connect leg the connection was made in, without its deadline.
	legReq := h != nil && hasDL && !dl.After(h.legEnd)
	if !legReq {
		h = nil
	}
	var msg jsonrpc.Message
	if req.Method == http.MethodPost && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(io.LimitReader(b, 1<<20))
			_ = b.Close()
			msg, _ = jsonrpc.DecodeMessage(data)
		}
	}
	call := false
	courtesy := false
	if r, ok := msg.(*jsonrpc.Request); ok {
		call = r.IsCall()
		courtesy = r.Method == "notifications/cancelled"
	}
	handshake := o.gc.dialEnd.Load()
	var bound time.Duration // of the wait for response headers; 0: none
	switch {
	case req.Method == http.MethodDelete || legReq:
		// Bounded by roundTripper, or by the leg.
	case courtesy:
		// notifications/cancelled for a leg that ended, sent under a
		// context detached from it: a courtesy, never past the
		// operation's own deadline.
		hh, _ := ctx.Value(hintKey{}).(*hintHolder)
		bound = detachedWriteBound
		if hh != nil {
			rem := hh.remaining()
			if rem <= 0 {
				return nil, errCourtesyDropped
			}
			bound = min(bound, rem)
		}
	case handshake != 0:
		// Opened from inside the go-sdk's connect under its own context
		// (the standalone SSE GET, subscriptions/listen): the connect
		// ceiling spans every request of the handshake.
		bound = time.Until(time.Unix(0, handshake))
		if bound <= 0 {
			if req.Method == http.MethodGet {
				o.gc.dead.Store(true)
			}
			return nil, context.DeadlineExceeded
		}
	case !hasDL && req.Method == http.MethodPost:
		// An answer to a server's request, or a notification, written
		// under the connection's context.
		bound = writeBound
	}
	var cancel context.CancelFunc = func() {}
	var timer *time.Timer
	if bound > 0 {
		var cctx context.Context
		cctx, cancel = context.WithCancel(ctx)
		timer = time.AfterFunc(bound, cancel)
		req = req.WithContext(cctx)
	}
	resp, err := o.inner.RoundTrip(req)
	if timer != nil && !timer.Stop() {
		// The bound fired before the headers came.
		if err == nil {
			_ = resp.Body.Close()
		}
		cancel()
		if handshake != 0 && req.Method == http.MethodGet {
			o.gc.dead.Store(true) // the standalone stream failed: so does the connection
		}
		return nil, context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		if handshake != 0 && req.Method == http.MethodGet && !hasDL {
			o.gc.dead.Store(true)
		}
		o.record(h, call, req, nil, err)
		return nil, err
	}
	o.record(h, call, req, resp, nil)
	if resp.Body != nil {
		// Only a leg's own response says whether an answer came cut off
		// or oversized: the standalone stream ending with the server's
		// process is a lost connection, not a truncated answer.
		resp.Body = &observedBody{ReadCloser: resp.Body, gc: o.gc, ctx: req.Context(), cancel: cancel, leg: legReq}
	} else {
		cancel()
	}
	return resp, nil
}

// record notes in the leg what became of its request: a call answered 2xx
// went out; a call answered 404, or 400 while naming a session, was refused
// before the server ran it; 401/403 is an authorization failure.
func (o *connObserver) record(h *hintHolder, call bool, req *http.Request, resp *http.Response, err error) {
	if h == nil {
		return
	}
	if resp == nil {
		if call {
			if errors.Is(err, syscall.ECONNREFUSED) {
				h.refused.Store(true) // nothing listens: it never arrived
			}
			h.wrote(errNotSent)
		}
		return
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		h.auth.Store(int32(code))
	case code == http.StatusBadRequest && req.Header.Get("Mcp-Session-Id") != "":
		// Some servers (the TypeScript SDK's) answer a session they do not
		// know with 400, not the spec's 404: renew it like a 404.
		h.sessionRejected.Store(true)
	}
	if !call {
		return
	}
	switch {
	case code >= 200 && code < 300:
		h.wrote(nil)
	case code == http.StatusNotFound || (code == http.StatusBadRequest && req.Header.Get("Mcp-Session-Id") != ""):
		h.refused.Store(true)
		h.wrote(errNotSent)
	default:
		h.wrote(errNotSent)
	}
}

var errNotSent = errors.New("mcpguard: request not accepted")

// observedBody is a response body of an observed connection.
type observedBody struct {
	io.ReadCloser
	gc     *guardConn
	ctx    context.Context
	cancel context.CancelFunc
	leg    bool // the body answers a leg's request
	prefix []byte
}

const bodyPrefixCap = 4 << 10

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if room := bodyPrefixCap - len(b.prefix); room > 0 && n > 0 {
		b.prefix = append(b.prefix, p[:min(n, room)]...)
	}
	if err != nil {
		if len(b.prefix) > 0 {
			s := string(b.prefix)
			b.gc.lastBody.Store(&s)
		}
		if err != io.EOF && b.leg && b.ctx.Err() == nil {
			switch msg := err.Error(); {
			case strings.Contains(msg, "exceeds max_result_bytes"):
				b.gc.oversized.Store(true)
			case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(msg, "unexpected EOF"):
				b.gc.truncated.Store(true)
			}
		}
	}
	return n, err
}

func (b *observedBody) Close() error {
	if len(b.prefix) > 0 {
		s := string(b.prefix)
		b.gc.lastBody.Store(&s)
	}
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
