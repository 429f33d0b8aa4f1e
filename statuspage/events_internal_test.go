package statuspage

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// registryOf returns a registry with n dependencies.
func registryOf(tb testing.TB, n int) *registry.Registry {
	tb.Helper()
	reg, err := registry.New(registry.WithMaxBreakers(n))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if _, err := reg.Get(registry.Key(fmt.Sprintf("dependency-%04d", i))); err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// openStreams opens n event streams on srv and returns a channel that
// receives one value for every status event any of them reads.
func openStreams(tb testing.TB, ctx context.Context, srv *httptest.Server, n int) <-chan struct{} {
	tb.Helper()
	events := make(chan struct{}, 1024)
	for range n {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			tb.Fatalf("GET /events: %s", resp.Status)
		}
		go func() {
			defer resp.Body.Close()
			// A status event is three lines ("event: status", "data: …",
			// ""); the stream starts with two ("retry: 2000", "").
			buf := make([]byte, 256<<10)
			newlines, seen := 0, 0
			for {
				k, err := resp.Body.Read(buf)
				newlines += bytes.Count(buf[:k], []byte{'\n'})
				for ; (newlines-2)/3 > seen; seen++ {
					events <- struct{}{}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	return events
}

// TestEventStreamsShareOneRendering: a refresh costs 16 open event streams
// what it costs one — the document is rendered and encoded once, and every
// stream sends the same bytes. Measured in allocations, which do not
// depend on the machine's load: each stream rendering its own document
// allocated 16 times as much.
func TestEventStreamsShareOneRendering(t *testing.T) {
	perRefresh := func(streams int) float64 {
		reg := registryOf(t, 256)
		h, err := New(reg, WithRefresh(time.Hour), WithMaxStreams(streams))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		ctx, cancel := context.WithCancel(context.Background())
		defer func() {
			cancel()
			h.Close()
			srv.Close()
		}()
		events := openStreams(t, ctx, srv, streams)
		for range streams {
			<-events
		}
		const rounds = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			h.observe(registry.Transition{})
			for range streams {
				<-events
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / rounds
	}
	one, many := perRefresh(1), perRefresh(16)
	t.Logf("allocations per refresh: %.0f with 1 stream, %.0f with 16", one, many)
	if many > 2*one {
		t.Errorf("a refresh allocates %.0f with 16 streams, %.0f with one: want at most twice as much", many, one)
	}
}

// TestEventStreamsRefreshWithoutTransitions: with no transition at all,
// every open stream still gets a new document each refresh period (from the
// one ticker all streams share).
func TestEventStreamsRefreshWithoutTransitions(t *testing.T) {
	reg := registryOf(t, 3)
	h, err := New(reg, WithRefresh(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		h.Close()
		srv.Close()
	}()
	const streams = 3
	events := openStreams(t, ctx, srv, streams)
	for range 3 * streams { // the first event and two refreshes each
		select {
		case <-events:
		case <-time.After(time.Minute):
			t.Fatal("no refresh within a minute")
		}
	}
}

// BenchmarkEventStreams: what one refresh of the status page costs with 1
// and with 64 open event streams, at 1,024 dependencies (a 2 MB document):
// each iteration wakes every stream, as a transition or the refresh period
// does, and waits until each has read its new event. The streams share one
// rendering of the document, so 64 cost about what one does, plus the
// bytes written.
func BenchmarkEventStreams(b *testing.B) {
	for _, streams := range []int{1, 64} {
		b.Run(fmt.Sprintf("deps=1024/streams=%d", streams), func(b *testing.B) {
			reg := registryOf(b, 1024)
			h, err := New(reg, WithRefresh(time.Hour), WithMaxStreams(streams), WithWriteTimeout(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(h)
			ctx, cancel := context.WithCancel(context.Background())
			defer func() {
				cancel()
				h.Close()
				srv.Close()
			}()
			events := openStreams(b, ctx, srv, streams)
			for range streams {
				<-events // the first event, sent at once
			}
			b.ResetTimer()
			for b.Loop() {
				h.observe(registry.Transition{})
				for range streams {
					<-events
				}
			}
		})
	}
}
