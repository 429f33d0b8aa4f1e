package failover

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
)

// hintKey is the context key of an attempt's *hintHolder.
type hintKey struct{}

// hintHolder receives the Retry-After of an attempt's HTTP responses. The
// transport writes it on the HTTP goroutine; the Model reads it after the
// endpoint returned an error.
type hintHolder struct{ d atomic.Int64 }

func (h *hintHolder) observe(d time.Duration) {
	for {
		cur := h.d.Load()
		if int64(d) <= cur || h.d.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

func (h *hintHolder) get() time.Duration { return time.Duration(h.d.Load()) }

// RetryAfterTransport returns an http.RoundTripper that records the
// Retry-After header of error responses (status ≥ 400) for the failover
// Model, which reads it after the endpoint's call failed and uses it as a
// cool-down floor, like Gemini's RetryInfo. genai.APIError carries no
// headers, so this is the only way to see Retry-After through the genai
// client: install it as the client's transport,
//
//	&genai.ClientConfig{HTTPClient: &http.Client{Transport: failover.RetryAfterTransport(nil)}, …}
//
// (FromConfig does). Requests made outside a failover Model's call pass
// through untouched. A nil base means http.DefaultTransport.
func RetryAfterTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &retryAfterTransport{base: base}
}

type retryAfterTransport struct{ base http.RoundTripper }

func (t *retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.StatusCode >= 400 {
		if v := resp.Header.Get("Retry-After"); v != "" {
			if h, ok := req.Context().Value(hintKey{}).(*hintHolder); ok {
				h.observe(retryafter.Parse(v, time.Now()))
			}
		}
	}
	return resp, err
}

// CloseIdleConnections closes the base transport's idle connections, for
// http.Client.CloseIdleConnections.
func (t *retryAfterTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
