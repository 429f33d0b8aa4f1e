package mcpguard

import (
	"context"
	"io"
	"net/http"
	"strconv"
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
	if h, ok := req.Context().Value(hintKey{}).(*hintHolder); ok && h.maxBytes > 0 && resp.Body != nil {
		resp.Body = &capBody{ReadCloser: resp.Body, left: int64(h.maxBytes) + envelopeSlack, max: h.maxBytes}
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if d := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
			RecordRetryAfter(req.Context(), d)
		}
	}
	return resp, nil
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
// streamable HTTP, using HTTPClient(client). The standalone SSE stream is
// disabled (tools need none, and it would hold a connection open), and the
// go-sdk's own stream resumption is left at its default.
func StreamableHTTP(endpoint string, client *http.Client) func(context.Context) (mcp.Transport, error) {
	hc := HTTPClient(client)
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil
	}
}
