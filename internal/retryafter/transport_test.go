package retryafter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestFromHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ms, ra string
		want   time.Duration
	}{
		{"5000", "", 5 * time.Second},
		{"1500", "30", 1500 * time.Millisecond}, // milliseconds first, as openai-go
		{"", "30", 30 * time.Second},
		{"soon", "7", 7 * time.Second}, // an unreadable Retry-After-Ms defers to Retry-After
		{"-5", "", 0},
		{"", "", 0},
		{"1e30", "", Max},
	} {
		h := http.Header{}
		if tc.ms != "" {
			h.Set("Retry-After-Ms", tc.ms)
		}
		if tc.ra != "" {
			h.Set("Retry-After", tc.ra)
		}
		if got := FromHeader(h, now); got != tc.want {
			t.Errorf("Retry-After-Ms %q Retry-After %q: %v, want %v", tc.ms, tc.ra, got, tc.want)
		}
	}
}

// The holder sees every HTTP attempt of a call, so the hint of a 429 a
// client retried survives; it keeps the longest hint with its status.
func TestTransportRecordsEveryAttempt(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After-Ms", "5000")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusOK) // not an error: no hint
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(nil)}
	var h Holder
	ctx := context.WithValue(t.Context(), HolderKey{}, &h)
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if h.Get() != 5*time.Second || h.Status() != http.StatusTooManyRequests {
		t.Fatalf("holder: %v status %d, want the 429's 5s", h.Get(), h.Status())
	}
	var empty Holder
	if empty.Get() != 0 || empty.Status() != 0 {
		t.Fatal("zero holder is not empty")
	}
	empty.Observe(48*time.Hour, 503)
	if empty.Get() != Max || empty.Status() != 503 {
		t.Fatalf("holder capped: %v %d", empty.Get(), empty.Status())
	}
}
