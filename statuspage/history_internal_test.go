package statuspage

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestHistoryKeepsTheNewestInOrder: the history ring keeps the newest
// transitions, oldest first, at every fill level.
func TestHistoryKeepsTheNewestInOrder(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 7} {
		r := history{limit: limit}
		for n := 1; n <= 3*limit+1; n++ {
			r.add(registry.Transition{Seq: uint64(n)})
			got := r.appendTo(nil)
			if want := min(n, limit); len(got) != want {
				t.Fatalf("limit %d after %d: %d kept, want %d", limit, n, len(got), want)
			}
			for i, tr := range got {
				if want := uint64(n - len(got) + 1 + i); tr.Seq != want {
					t.Fatalf("limit %d after %d: [%d].Seq = %d, want %d (%v)", limit, n, i, tr.Seq, want, got)
				}
			}
		}
	}
}

// BenchmarkObserveFullHistory: recording a transition costs the same with
// the largest history as with the default (it used to move the whole
// buffer once full).
func BenchmarkObserveFullHistory(b *testing.B) {
	for _, n := range []int{DefaultHistory, 1 << 16} {
		b.Run(fmt.Sprint("history=", n), func(b *testing.B) {
			r := history{limit: n}
			for i := range n {
				r.add(registry.Transition{Seq: uint64(i)})
			}
			b.ReportAllocs()
			for b.Loop() {
				r.add(registry.Transition{})
			}
		})
	}
}

// TestSlashRedirectStaysOnThisHost: the redirect to the page's trailing
// slash keeps only the request's path. A request line in absolute form, or
// a path that would read as protocol-relative, never sends the browser to
// another host.
func TestSlashRedirectStaysOnThisHost(t *testing.T) {
	reg := registry.MustNew()
	h, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mounted := http.StripPrefix("/breakers", h)
	for _, tc := range []struct {
		line, want string
	}{
		{"GET /breakers HTTP/1.1", "/breakers/"},
		{"GET http://evil.example/breakers HTTP/1.1", "/breakers/"},
		{"GET https://evil.example:8443/breakers HTTP/1.1", "/breakers/"},
	} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.line + "\r\nHost: agent.internal\r\n\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		mounted.ServeHTTP(rec, req)
		if loc := rec.Header().Get("Location"); rec.Code != http.StatusMovedPermanently || loc != tc.want {
			t.Errorf("%s: %d Location %q, want 301 %q", tc.line, rec.Code, loc, tc.want)
		}
	}
	for _, uri := range []string{"//evil.example/breakers", "/evil.example//breakers"} {
		if loc, ok := slashRedirect(uri); ok && (strings.HasPrefix(loc, "//") || !strings.HasPrefix(loc, "/")) {
			t.Errorf("slashRedirect(%q) = %q: not a path on this host", uri, loc)
		}
	}
	if _, ok := slashRedirect("/breakers?x=1"); ok {
		t.Error("a request with a query was redirected")
	}
}
