package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HolderKey is the context key under which a call carries its *Holder.
type HolderKey struct{}

// Holder follows the HTTP attempts of one call: it keeps the last
// response the client received — its status, its retry hint (error
// responses only) and when it arrived — and forgets it when the client sends
// its next request. A client that retries by itself (openai-go sleeps out a
// 429's Retry-After-Ms and tries again) hides a hinted answer behind the
// context error of a deadline that cuts it meanwhile; the holder tells
// whether that is what happened (Last.Sleeping) and which answer it was.
// Transport writes it on the HTTP goroutine; the caller reads it after the
// call failed.
type Holder struct {
	mu   sync.Mutex
	last Last // Guarded by mu.
}

// Last is a Holder's snapshot: the last response of the call's HTTP
// attempts. The zero Last means none, or a request sent since (in flight,
// or failed without a response).
type Last struct {
	Status int           // HTTP status (0: none)
	Hint   time.Duration // its retry hint (0: none; always 0 below 400)
	At     time.Time     // when it arrived
}

// Sleeping reports whether a client that honours the hint would still be
// sleeping it out at now: the last response carried a hint that had not
// passed by now, and no request was sent since.
func (l Last) Sleeping(now time.Time) bool {
	return l.Hint > 0 && now.Before(l.At.Add(l.Hint))
}

// Observe records a response of HTTP status code, carrying retry hint d
// (0: none; capped at Max), as the call's last one, arrived now.
func (h *Holder) Observe(d time.Duration, code int) {
	h.record(Last{Status: code, Hint: min(max(d, 0), Max), At: time.Now()})
}

// Sent records that the client sent a request: the last response is
// forgotten (it was not the call's last word).
func (h *Holder) Sent() { h.record(Last{}) }

func (h *Holder) record(l Last) {
	h.mu.Lock()
	h.last = l
	h.mu.Unlock()
}

// Load returns the last response (the zero Last: none since the last
// request), all of it from one response.
func (h *Holder) Load() Last {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

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

// Transport returns an http.RoundTripper that records every request and
// response in the *Holder of the request's context (under HolderKey{}):
// Sent as a request goes out, then Observe with the response's status and,
// for an error response (status ≥ 400), its retry hint (FromHeader:
// Retry-After-Ms, else Retry-After). Requests without a Holder pass through
// untouched. A nil base
// means http.DefaultTransport.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, _ := req.Context().Value(HolderKey{}).(*Holder)
	if h == nil {
		return t.base.RoundTrip(req)
	}
	h.Sent()
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		var d time.Duration
		if resp.StatusCode >= 400 {
			d = FromHeader(resp.Header, time.Now())
		}
		h.Observe(d, resp.StatusCode)
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
