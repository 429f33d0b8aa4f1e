package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// HolderKey is the context key under which a call carries its *Holder.
type HolderKey struct{}

// Holder receives the retry hints of a call's HTTP error responses: the
// longest seen, and the status of the response that carried it. Every HTTP
// attempt of the call is seen, so a hint survives a client's own retry loop
// (openai-go sleeps out a 429's Retry-After-Ms and tries again; a deadline
// that cuts the call meanwhile leaves only a context error). Transport
// writes it on the HTTP goroutine; the caller reads it after the call
// failed.
type Holder struct {
	// v packs the hint in nanoseconds (at most Max, below 2⁴⁷) in its low
	// 48 bits and the HTTP status in its high 16, so both change together.
	v atomic.Uint64
}

const holderBits = 48

// Observe records d, carried by a response of HTTP status code, keeping the
// longest (and its status).
func (h *Holder) Observe(d time.Duration, code int) {
	if d <= 0 {
		return
	}
	d = min(d, Max)
	n := uint64(d) | uint64(uint16(code))<<holderBits
	for {
		cur := h.v.Load()
		if uint64(d) <= cur&(1<<holderBits-1) || h.v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Get returns the longest retry hint observed (0: none).
func (h *Holder) Get() time.Duration { return time.Duration(h.v.Load() & (1<<holderBits - 1)) }

// Status returns the HTTP status of the response that carried Get's hint
// (0: none).
func (h *Holder) Status() int { return int(h.v.Load() >> holderBits) }

// FromHeader reads a response's retry hint the way openai-go's own retries
// do: Retry-After-Ms (milliseconds; OpenAI and Azure OpenAI send it) first,
// then Retry-After (seconds or an HTTP date relative to now). 0 for none.
func FromHeader(h http.Header, now time.Time) time.Duration {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n > 0 {
			return Seconds(n / 1000)
		}
	}
	if ra := h.Get("Retry-After"); ra != "" {
		return Parse(ra, now)
	}
	return 0
}

// Transport returns an http.RoundTripper that records the retry hint
// (FromHeader: Retry-After-Ms, else Retry-After) of error responses
// (status ≥ 400) in the *Holder of the request's context (under
// HolderKey{}); requests without one pass through untouched. A nil base
// means http.DefaultTransport.
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
		if h, ok := req.Context().Value(HolderKey{}).(*Holder); ok {
			h.Observe(FromHeader(resp.Header, time.Now()), resp.StatusCode)
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
