package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of writes made under a context without a deadline. The go-sdk
// sends notifications/cancelled for a request whose context ended under a
// detached context (it keeps our leg's values): that courtesy is given at
// most detachedWriteBound, and never past the operation's own deadline, so
// that a peer that stopped reading cannot hold the caller past its budget.
// Other detached writes get writeBound.
const (
	writeBound         = time.Second
	detachedWriteBound = 100 * time.Millisecond
)

// conn owns one server's session: it dials lazily, shares one in-flight
// dial between concurrent operations (each waits only as long as its own
// leg allows, and dials itself when the shared dial ended for its caller's
// own reasons), and drops a session after a transport fault so that the
// next operation reconnects.
type conn struct {
	s      *server
	client *mcp.Client
	owned  bool // false: the caller's Session; never closed or replaced

	mu      sync.Mutex
	sess    *mcp.ClientSession // Guarded by mu.
	gc      *guardConn         // Guarded by mu: sess's connection, nil for a caller's session.
	dialing chan struct{}      // Guarded by mu: closed when the in-flight dial ends.
	dialErr *Error             // Guarded by mu: result of the last dial, for its waiters.
	dialEnd time.Time          // Guarded by mu: when the last dial ended.
	closed  bool               // Guarded by mu.
	// lastHTTP is the HTTP client of the last streamable connection.
	lastHTTP *http.Client // Guarded by mu.
}

var errGuardClosed = errors.New("mcpguard: guard closed")

// session returns a live session, connecting (a connect leg of o) if there
// is none. A session whose connection broke is replaced.
func (c *conn) session(o *op) (*mcp.ClientSession, *guardConn, *Error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			e := o.err(BoundaryConnect, errGuardClosed)
			e.Class, e.Reason = ClassCancelled, ReasonCancelled
			return nil, nil, e
		}
		if c.sess != nil && (c.gc == nil || !c.gc.dead.Load()) {
			s, gc := c.sess, c.gc
			c.mu.Unlock()
			return s, gc, nil
		}
		if c.sess != nil { // broken: replace
			old, oldGC := c.detachLocked()
			c.mu.Unlock()
			closeSession(old, oldGC)
			continue
		}
		if !c.owned {
			c.mu.Unlock()
			e := o.err(BoundaryConnect, mcp.ErrConnectionClosed)
			e.Class, e.Reason = ClassFault, ReasonConnectionClosed
			return nil, nil, e
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			// Join the dial in flight, for no longer than our own connect leg.
			l, e := o.leg(BoundaryConnect, time.Now().Add(c.s.cfg.ConnectTimeout), LimitConnectTimeout)
			if e != nil {
				return nil, nil, e
			}
			select {
			case <-ch:
				l.cancel()
				c.mu.Lock()
				s, gc, derr, dialEnd := c.sess, c.gc, c.dialErr, c.dialEnd
				c.mu.Unlock()
				if s != nil {
					return s, gc, nil
				}
				if derr != nil && derr.callerBound() {
					// The dial ended for its own caller's reasons (cancelled,
					// or out of that caller's budget): nothing is known about
					// the server, so dial ourselves within our own budget.
					if err := o.parent.Err(); err != nil {
						return nil, nil, o.failure(l, err, nil)
					}
					continue
				}
				if derr != nil {
					// Report the dial's failure as ours, with our bookkeeping.
					e := o.err(BoundaryConnect, derr.Cause)
					e.Class, e.Reason, e.Limit, e.Granted = derr.Class, derr.Reason, derr.Limit, derr.Granted
					// A delay the server asked for runs from the end of the
					// dial that got it, as it does for that dial's caller: we
					// retry at the same moment, never earlier.
					if derr.RetryAfter > 0 {
						e.RetryAfter = max(derr.RetryAfter-time.Since(dialEnd), time.Nanosecond)
					}
					return nil, nil, e
				}
				continue
			case <-l.ctx.Done():
				l.cancel()
				return nil, nil, o.failure(l, l.ctx.Err(), nil)
			}
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()

		s, gc, e := c.dialTraced(o)

		c.mu.Lock()
		c.dialing = nil
		c.dialErr, c.dialEnd = e, time.Now()
		if e == nil {
			if c.closed {
				c.mu.Unlock()
				closeSession(s, gc)
				close(ch)
				e := o.err(BoundaryConnect, errGuardClosed)
				e.Class, e.Reason = ClassCancelled, ReasonCancelled
				return nil, nil, e
			}
			c.sess, c.gc = s, gc
			if gc != nil && gc.http != nil {
				c.lastHTTP = gc.http
			}
		}
		c.mu.Unlock()
		close(ch)
		return s, gc, e
	}
}

// dial runs the handshake as a connect leg of o.
func (c *conn) dial(o *op) (*mcp.ClientSession, *guardConn, *Error) {
	l, e := o.leg(BoundaryConnect, time.Now().Add(c.s.cfg.ConnectTimeout), LimitConnectTimeout)
	if e != nil {
		return nil, nil, e
	}
	defer l.cancel()
	t, err := c.s.cfg.Dial(l.ctx)
	if err != nil {
		return nil, nil, o.failure(l, err, nil)
	}
	gt := &guardTransport{inner: t, maxBytes: c.s.cfg.MaxResultBytes, dialEnd: l.end}
	sess, err := c.client.Connect(l.ctx, gt, nil)
	if gt.gc != nil {
		gt.gc.dialEnd.Store(0) // the handshake is over: later detached writes get their own bounds
	}
	if err == nil && gt.gc != nil && gt.gc.dead.Load() {
		// The go-sdk's Connect can succeed on a connection that broke
		// during it: a request it sends without awaiting (on go-sdk ≥
		// v1.7.0, subscriptions/listen) could not be written within the
		// leg. The session is unusable; say so now, as a failed connect:
		// a timeout at the leg's limit when the leg's time is what ran out.
		closeSession(sess, gt.gc)
		if !time.Now().Before(l.end) {
			e := o.err(BoundaryConnect, context.DeadlineExceeded)
			e.Class, e.Reason, e.Limit, e.Granted = ClassTimeout, ReasonDeadline, l.limit, l.granted
			return nil, nil, e
		}
		return nil, nil, o.failure(l, mcp.ErrConnectionClosed, gt.gc)
	}
	if err != nil {
		// The go-sdk closes the session when initialize fails; close the
		// connection ourselves in case the failure came earlier or later.
		closeSession(sess, gt.gc)
		return nil, nil, o.failure(l, err, gt.gc)
	}
	if gc := gt.gc; gc != nil && gc.passthrough {
		// The go-sdk's own connection ends its session when it fails
		// (the server said the session is gone, a stream broke beyond
		// resumption): mark it dead so that the next operation reconnects.
		go func() {
			_ = sess.Wait()
			gc.dead.Store(true)
		}()
	}
	return sess, gt.gc, nil
}

// drop closes sess if it is still the current session, so that the next
// operation reconnects. A caller's own session is only marked unusable by
// its connection; it is never closed here.
func (c *conn) drop(sess *mcp.ClientSession) {
	if !c.owned {
		return
	}
	c.mu.Lock()
	if c.sess != sess || sess == nil {
		c.mu.Unlock()
		return
	}
	old, gc := c.detachLocked()
	c.mu.Unlock()
	closeSession(old, gc)
}

// detachLocked removes the current session and returns it for closing
// outside the lock. Caller holds mu.
func (c *conn) detachLocked() (*mcp.ClientSession, *guardConn) {
	s, gc := c.sess, c.gc
	c.sess, c.gc = nil, nil
	return s, gc
}

// closeSession closes the connection first, which ends every call still
// waiting on it, so that the session's graceful Close (which waits for
// in-flight calls) returns at once and its goroutines end with it.
func closeSession(s *mcp.ClientSession, gc *guardConn) {
	if gc != nil {
		_ = gc.Close()
	}
	if s != nil {
		_ = s.Close()
	}
}

func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	var old *mcp.ClientSession
	var gc *guardConn
	if c.owned {
		old, gc = c.detachLocked()
	}
	hc := c.lastHTTP
	c.mu.Unlock()
	closeSession(old, gc)
	if hc != nil {
		// The session's requests are over: leave no idle keep-alive
		// connection of the caller's HTTP client open to the server.
		hc.CloseIdleConnections()
	}
}

func (c *conn) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil && (c.gc == nil || !c.gc.dead.Load())
}

// guardTransport wraps a server's transport so that every connection it
// makes is a guardConn.
type guardTransport struct {
	inner    mcp.Transport
	maxBytes int
	dialEnd  time.Time // the connect leg's deadline
	gc       *guardConn
}

// Connect connects the inner transport. The go-sdk type-asserts optional,
// unexported interfaces on the connection it gets (its streamable HTTP
// client connection implements the hook that records the negotiated
// protocol version for the MCP-Protocol-Version header and opens the
// standalone SSE stream); a wrapper outside the go-sdk cannot forward an
// unexported method, so a connection that has such hooks is handed to the
// go-sdk unwrapped, and guarded one layer down, on its HTTP requests
// (httpconn.go). Only connections without hooks (stdio, in-memory, pipes)
// are wrapped in a guardConn. TestConnectionHooksForwarded checks the
// go-sdk's list of hooks against this.
func (t *guardTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if st, ok := t.inner.(*mcp.StreamableClientTransport); ok && st != nil {
		gc := &guardConn{maxBytes: t.maxBytes, passthrough: true}
		gc.dialEnd.Store(t.dialEnd.UnixNano())
		cp := *st // a copy: the caller's transport is not modified
		cp.HTTPClient = observedClient(st.HTTPClient, gc)
		gc.http = cp.HTTPClient
		c, err := cp.Connect(ctx)
		if err != nil {
			return nil, err
		}
		gc.inner = c
		t.gc = gc
		return c, nil
	}
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if hasHooks(c) {
		// A hooked connection from a transport we cannot observe below
		// the connection: faithful first, unguarded at the transport.
		gc := &guardConn{inner: c, maxBytes: t.maxBytes, passthrough: true}
		t.gc = gc
		return c, nil
	}
	t.gc = &guardConn{inner: c, maxBytes: t.maxBytes}
	t.gc.dialEnd.Store(t.dialEnd.UnixNano())
	return t.gc, nil
}

// hookedConns are the go-sdk's client connection types that implement one
// of the optional interfaces it type-asserts on a connection (see
// TestConnectionHooksForwarded, which derives the list from the go-sdk's
// source in the module cache and fails when it changes).
var hookedConns = map[string]bool{"*mcp.streamableClientConn": true}

func hasHooks(c mcp.Connection) bool { return hookedConns[fmt.Sprintf("%T", c)] }

// guardConn is the client side of one connection. It
//   - replaces a response whose result exceeds maxBytes with a JSON-RPC
//     error (codeOversized), so nothing of it is decoded or passed on;
//   - notices a connection that broke (dead) and one that broke in the
//     middle of a message (truncated);
//   - bounds every write by its context's deadline (or writeBound when it
//     has none) by closing the connection if the write is still blocked, so
//     that a peer that stopped reading cannot hold a caller or a goroutine
//     (over streamable HTTP the write, a request, ends with its context and
//     the connection is kept);
//   - remembers the last response, so that a protocol fault can log the raw
//     payload (bounded).
type guardConn struct {
	inner    mcp.Connection
	maxBytes int
	// passthrough: the go-sdk was handed inner itself (it has hooks a
	// wrapper would hide): this guardConn only observes it, from its HTTP
	// requests (httpconn.go) and its session's end (conn.watch). Its Read
	// and Write are not used.
	passthrough bool
	// http is the HTTP client of a passthrough streamable connection, whose
	// idle keep-alive connections Guard.Close closes.
	http *http.Client
	// lastBody is a bounded prefix of the last HTTP response body read
	// (passthrough), for the log line of a protocol fault.
	lastBody  atomic.Pointer[string]
	dead      atomic.Bool
	truncated atomic.Bool
	oversized atomic.Bool
	last      atomic.Pointer[jsonrpc.Response]
	closeOnce sync.Once

	// ctxAborts: the connection's writes end when their context does
	// (streamable HTTP: each write is a request), so a write's bound needs no
	// closing of the connection.
	ctxAborts bool

	// dialEnd is the connect leg's deadline (Unix nanoseconds) while the
	// handshake runs, 0 after. A write made during the handshake under a
	// context without a deadline (go-sdk ≥ v1.7.0 opens subscriptions/listen
	// under a detached context from inside Connect) is bounded by it: the
	// connect ceiling spans every request of the handshake.
	dialEnd atomic.Int64
}

func (c *guardConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.inner.Read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.dead.Store(true)
			// A message cut off mid-way: io.ErrUnexpectedEOF from the stream
			// decoder, or its text from the HTTP transport (which wraps with %v).
			switch msg := err.Error(); {
			case strings.Contains(msg, "exceeds max_result_bytes"):
				c.oversized.Store(true)
			case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(msg, "unexpected EOF"):
				c.truncated.Store(true)
			}
		}
		return nil, err
	}
	if r, ok := m.(*jsonrpc.Response); ok {
		c.last.Store(r)
		if r.Error == nil && c.maxBytes > 0 && len(r.Result) > c.maxBytes {
			return &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{
				Code:    codeOversized,
				Message: "mcpguard: result of " + strconv.Itoa(len(r.Result)) + " bytes exceeds max_result_bytes " + strconv.Itoa(c.maxBytes),
			}}, nil
		}
	}
	return m, nil
}

func (c *guardConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if dl, ok := ctx.Deadline(); ok {
		if h, ok := ctx.Value(hintKey{}).(*hintHolder); ok && dl.After(h.legEnd) {
			// A write under a context detached from our leg that carries a
			// deadline of its own (go-sdk ≥ v1.7.0 sends
			// notifications/cancelled under the leg's values with a 5s
			// timeout, and closes the session only after it): the same
			// courtesy bound as a detached write without one.
			rem := h.remaining()
			if rem <= 0 {
				return nil // the operation is over: drop the courtesy notice
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, min(detachedWriteBound, rem))
			defer cancel()
		}
	} else {
		bound := writeBound
		if h, ok := ctx.Value(hintKey{}).(*hintHolder); ok {
			rem := h.remaining()
			if rem <= 0 {
				return nil // the operation is over: drop the courtesy notice
			}
			bound = min(detachedWriteBound, rem)
		}
		if end := c.dialEnd.Load(); end != 0 {
			rem := time.Until(time.Unix(0, end))
			if rem <= 0 {
				return context.DeadlineExceeded // the handshake's leg is over: nothing written
			}
			bound = min(bound, rem)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return err // nothing written; the connection is fine
	}
	var err error
	if c.ctxAborts {
		// A write that is an HTTP request ends with its context, and the
		// session survives it: closing the connection would end every
		// other operation on it too (each then charged with a fault the
		// server did not cause) and cost the next one a handshake.
		err = c.inner.Write(ctx, m)
	} else {
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		err = c.inner.Write(ctx, m)
		if !stop() && err == nil {
			// The bound fired while writing: the connection is closed, and
			// the message may be incomplete.
			err = mcp.ErrConnectionClosed
		}
	}
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		// Record, in the leg the request belongs to, whether it was written:
		// only a failed write can prove it never reached the server (notSent).
		if h, ok := ctx.Value(hintKey{}).(*hintHolder); ok {
			h.wrote(err)
		}
	}
	if err != nil && ctx.Err() == nil && !isRejected(err) {
		c.dead.Store(true)
	}
	return err
}

// isRejected reports whether err says the request was rejected before it
// was sent or answered without breaking the connection (the go-sdk wraps
// such errors with its internal ErrRejected, code -32005). The whole chain
// is searched: on go-sdk ≥ v1.8.0 an HTTP error answer carrying a JSON-RPC
// error (server/discover answered 400 with -32022) wraps that error first
// and the rejection after it.
func isRejected(err error) bool {
	found := false
	walkErrs(err, func(e error) bool {
		if we, ok := e.(*jsonrpc.Error); ok && we.Code == codeRejected {
			found = true
		}
		return !found
	})
	return found
}

// walkErrs calls f on err and every error it wraps, depth first, until f
// returns false.
func walkErrs(err error, f func(error) bool) bool {
	if err == nil {
		return true
	}
	if !f(err) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walkErrs(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !walkErrs(e, f) {
				return false
			}
		}
	}
	return true
}

func (c *guardConn) Close() error {
	c.dead.Store(true)
	var err error
	c.closeOnce.Do(func() { err = c.inner.Close() })
	return err
}

func (c *guardConn) SessionID() string { return c.inner.SessionID() }

// lastPayload returns a bounded, printable prefix of the last response, for
// logs only.
func (c *guardConn) lastPayload(limit int) string {
	if c == nil {
		return ""
	}
	r := c.last.Load()
	if r == nil {
		if b := c.lastBody.Load(); b != nil {
			return printable(*b, limit)
		}
		return ""
	}
	raw := r.Result
	if r.Error != nil {
		raw = []byte(r.Error.Error())
	}
	return printable(string(raw), limit)
}
