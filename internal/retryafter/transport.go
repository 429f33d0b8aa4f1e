package retryafter

import (
	"net/http"
	"sync/atomic"
	"time"
)

// HolderKey is the context key under which a call carries its *Holder.
type HolderKey struct{}

// Holder receives the Retry-After of a call's HTTP error responses (the
// longest seen). Transport writes it on the HTTP goroutine; the caller reads
// it after the call failed.
type Holder struct{ d atomic.Int64 }

// Observe records d, keeping the longest.
func (h *Holder) Observe(d time.Duration) {
	for {
		cur := h.d.Load()
		if int64(d) <= cur || h.d.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// Get returns the longest Retry-After observed (0: none).
func (h *Holder) Get() time.Duration { return time.Duration(h.d.Load()) }

// Transport returns an http.RoundTripper that records the Retry-After header
// of error responses (status ≥ 400) in the *Holder of the request's context
// (under HolderKey{}); requests without one pass through untouched. A nil
// base means http.DefaultTransport.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.StatusCode >= 400 {
		if v := resp.Header.Get("Retry-After"); v != "" {
			if h, ok := req.Context().Value(HolderKey{}).(*Holder); ok {
				h.Observe(Parse(v, time.Now()))
			}
		}
	}
	return resp, err
}

// CloseIdleConnections closes the base transport's idle connections, for
// http.Client.CloseIdleConnections.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
