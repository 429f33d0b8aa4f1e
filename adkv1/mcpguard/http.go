package mcpguard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
)

// closeTimeout bounds the DELETE with which the go-sdk ends an HTTP session;
// it sends it without a deadline. Inside an operation (a handshake that
// failed) it is also bounded by what is left of the operation.
const closeTimeout = 250 * time.Millisecond

// HTTPClient returns a client for the go-sdk's streamable HTTP transport
// that (1) records a server's Retry-After on 429 and 503 responses in the
// leg that got it, so that the retry waits exactly that long or does not
// happen; and (2) bounds and drains the session-closing DELETE, which the
// go-sdk sends with no deadline and never closes, so that closing a session
// on a server that stopped answering neither hangs nor leaks a connection.
// base (nil: http.DefaultClient) is copied, not modified.
func HTTPClient(base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &roundTripper{inner: rt}
	return &c
}

type roundTripper struct{ inner http.RoundTripper }

// CloseIdleConnections forwards to the inner transport.
func (rt *roundTripper) CloseIdleConnections() { closeIdle(rt.inner) }

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete {
		bound := closeTimeout
		if h, ok := req.Context().Value(hintKey{}).(*hintHolder); ok {
			if rem := h.remaining(); rem > 0 {
				bound = min(bound, rem)
			}
		}
		ctx, cancel := context.WithTimeout(req.Context(), bound)
		defer cancel()
		resp, err := rt.inner.RoundTrip(req.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		resp.Body = http.NoBody
		return resp, nil
	}
	resp, err := rt.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if h, ok := req.Context().Value(hintKey{}).(*hintHolder); ok && resp.Body != nil {
		if h.maxBytes > 0 {
			resp.Body = &capBody{ReadCloser: resp.Body, left: int64(h.maxBytes) + envelopeSlack, max: h.maxBytes}
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &sseWatch{ReadCloser: resp.Body, h: h}
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if d := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
			RecordRetryAfter(req.Context(), d)
			if h, ok := req.Context().Value(hintKey{}).(*hintHolder); ok && h.connect && h.decline != nil {
				// A handshake the server asked to wait with: the go-sdk
				// (≥ v1.7.0) would fall back from server/discover to
				// initialize at once, inside the server's delay. End the
				// connect leg now; the retry, if any, waits the delay.
				h.decline(&serverBusy{status: resp.StatusCode, wait: d})
			}
		}
	}
	return resp, nil
}

// serverBusy is the cause of a connect leg ended because the server
// answered 429 or 503 with Retry-After.
type serverBusy struct {
	status int
	wait   time.Duration
}

func (b *serverBusy) Error() string {
	return fmt.Sprintf("mcpguard: the server answered the handshake %d %s and asked to wait %s", b.status, http.StatusText(b.status), b.wait)
}

// sseWatch reads an SSE response as the go-sdk will, for the two fields
// that decide what happens when the stream ends without the answer: "id:"
// (the stream can be resumed) and "retry:" (how long the go-sdk will wait
// before resuming it; it must wait at least that long, per the MCP spec).
// When the stream ends, resumable, with a server's delay that does not fit
// before the leg's deadline, the wait is declined at once: the leg ends with
// a *retryDeclined cause, instead of the caller being held until the
// deadline cuts a wait that could never lead to an answer in time. A delay
// that fits is left to the go-sdk, which waits it out exactly.
type sseWatch struct {
	io.ReadCloser
	h     *hintHolder
	line  []byte        // the current line's first bytes (enough for the fields)
	long  bool          // the current line exceeded line's cap
	id    bool          // an event id was seen: the go-sdk will try to resume
	retry time.Duration // the last usable retry:, as the go-sdk reads it
	done  bool
}

const sseLineCap = 64

func (w *sseWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	for _, c := range p[:n] {
		switch {
		case c == '\n':
			w.field()
		case len(w.line) < sseLineCap:
			w.line = append(w.line, c)
		default:
			w.long = true
		}
	}
	if err != nil && !w.done {
		w.done = true
		w.field()
		w.end()
	}
	return n, err
}

// field interprets the line just ended as the go-sdk does (mcp/event.go:
// lines end at '\n', values are trimmed of spaces; retry: is
// strconv.ParseInt of the value, in milliseconds, unusable values leave the
// previous one, and a value ≤ 0 means the go-sdk's own backoff).
func (w *sseWatch) field() {
	line, long := w.line, w.long
	w.line, w.long = w.line[:0], false
	if long {
		return
	}
	name, value, ok := strings.Cut(strings.TrimRight(string(line), "\r"), ":")
	if !ok {
		return
	}
	value = strings.TrimSpace(value)
	switch name {
	case "id":
		if value != "" {
			w.id = true
		}
	case "retry":
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			w.retry = time.Duration(n) * time.Millisecond
		}
	}
}

// end declines the go-sdk's wait to resume the stream when the server's
// delay cannot be honoured within the leg.
func (w *sseWatch) end() {
	if !w.id || w.retry <= 0 || w.h.decline == nil {
		return
	}
	if left := time.Until(w.h.legEnd); w.retry >= left {
		w.h.decline(&retryDeclined{wait: w.retry, left: max(left, 0)})
	}
}

// retryDeclined is the cause of a leg ended because the server asked, with
// SSE retry:, for a wait longer than the leg had left.
type retryDeclined struct{ wait, left time.Duration }

func (d *retryDeclined) Error() string {
	return fmt.Sprintf("mcpguard: the server asked to wait %s before resuming its stream; %s left", d.wait, d.left.Round(time.Millisecond))
}

// envelopeSlack is what a response body may hold beyond the result's
// MaxResultBytes: the JSON-RPC envelope and SSE framing.
const envelopeSlack = 64 << 10

// errBodyTooLarge ends a response body that exceeds the cap; its text is
// what classifyErr recognises (the go-sdk wraps it with %v).
type errBodyTooLarge struct{ max int }

func (e errBodyTooLarge) Error() string {
	return "mcpguard: response body exceeds max_result_bytes " + strconv.Itoa(e.max)
}

// capBody stops reading a response body past its cap, so that an oversized
// answer costs at most the cap in memory.
type capBody struct {
	io.ReadCloser
	left int64
	max  int
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge{b.max}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// StreamableHTTP returns a Server.Dial for an MCP server at endpoint over
// streamable HTTP, using HTTPClient(client). The go-sdk runs the connection
// as it would alone: on a legacy (session) server it opens the standalone
// SSE stream, on which the server sends tools/list_changed and requests
// not tied to a call (elicitation, sampling); it holds one connection open
// per server. Its own stream resumption is left at its default.
//
// Keep credentials out of endpoint (user info, a token in the query): a
// transport error quotes the URL, and the guard's log lines carry that error
// as their cause. Send them in a header, from client's Transport.
func StreamableHTTP(endpoint string, client *http.Client) func(context.Context) (mcp.Transport, error) {
	hc := HTTPClient(client)
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil
	}
}
