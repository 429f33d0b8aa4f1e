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

// The holder follows every HTTP attempt of a call and keeps the last
// response: a later answer replaces a hinted one (its hint then says
// nothing about the call), and a request sent forgets it.
func TestTransportKeepsTheLastResponse(t *testing.T) {
	var n atomic.Int32
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After-Ms", "5000")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusInternalServerError) // no hint
		case 3:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusOK) // not an error: no hint
		case 4:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			hang <- struct{}{}
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(nil)}
	var h Holder
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), HolderKey{}, &h))
	defer cancel()
	do := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for i, want := range []Last{
		{Status: http.StatusTooManyRequests, Hint: 5 * time.Second},
		{Status: http.StatusInternalServerError},
		{Status: http.StatusOK},
		{Status: http.StatusServiceUnavailable, Hint: time.Second},
	} {
		before := time.Now()
		do()
		got := h.Load()
		if got.Status != want.Status || got.Hint != want.Hint || got.At.Before(before) || got.At.After(time.Now()) {
			t.Fatalf("after response %d: %+v, want %d with hint %v", i+1, got, want.Status, want.Hint)
		}
		if want.Hint > 0 && (!got.Sleeping(got.At.Add(want.Hint-time.Nanosecond)) || got.Sleeping(got.At.Add(want.Hint))) {
			t.Errorf("response %d: Sleeping is not true exactly until its hint has passed", i+1)
		}
		if want.Hint == 0 && got.Sleeping(got.At) {
			t.Errorf("response %d without a hint: Sleeping", i+1)
		}
	}
	go func() { <-hang; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the hung request answered")
	}
	if got := h.Load(); got != (Last{}) {
		t.Fatalf("after a request sent (and cut) without a response: %+v, want none", got)
	}

	var empty Holder
	if empty.Load() != (Last{}) {
		t.Fatal("zero holder is not empty")
	}
	empty.Observe(48*time.Hour, 503)
	if l := empty.Load(); l.Hint != Max || l.Status != 503 {
		t.Fatalf("holder capped: %+v", l)
	}
}
