package statuspage_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

const token = "0123456789abcdef-operator"

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newRegistry(t *testing.T) (*registry.Registry, *registrytest.FakeClock) {
	t.Helper()
	clk := registrytest.NewFakeClock(t0)
	reg, err := registry.New(registry.WithClock(clk), registry.WithRand(func() float64 { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	return reg, clk
}

func newPage(t *testing.T, reg *registry.Registry, opts ...statuspage.Option) (*statuspage.Handler, *httptest.Server) {
	t.Helper()
	opts = append([]statuspage.Option{statuspage.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	h, err := statuspage.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/breakers/", http.StripPrefix("/breakers", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); srv.Close() }) // Close ends the event streams first
	return h, srv
}

func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestNewListsEveryProblem(t *testing.T) {
	_, err := statuspage.New(nil, statuspage.WithHistory(0), statuspage.WithRefresh(time.Nanosecond),
		statuspage.WithMaxStreams(-1), statuspage.WithActions("short-secret"), statuspage.WithFleet(nil),
		statuspage.WithThrottles(nil))
	if err == nil {
		t.Fatal("New accepted invalid options")
	}
	for _, want := range []string{"registry is nil", "history 0", "refresh 1ns", "max streams -1", "token must be at least", "WithFleet", "WithThrottles: a source func is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "short-secret") {
		t.Errorf("error echoes the token: %q", err)
	}
}

func TestDocumentAndHealth(t *testing.T) {
	reg, clk := newRegistry(t)
	h, srv := newPage(t, reg)
	billing, _ := reg.Get("billing")
	search, _ := reg.Get("search")
	for range 3 {
		tk, _ := search.Admit()
		tk.Done(registry.Success)
	}
	tk, _ := search.Admit()
	tk.Done(registry.Failure)

	tests := []struct {
		name        string
		act         func()
		wantHealth  string
		wantBilling string
		wantRetry   float64
	}{
		{"all closed", func() {}, "pass", "closed", 0},
		{"billing open", func() { billing.Trip(30*time.Second, registry.CauseRetryHint) }, "warn", "open", 30},
		{"ten seconds later", func() { clk.Advance(10 * time.Second) }, "warn", "open", 20},
		{"reset", func() { reg.Reset("billing") }, "pass", "closed", 0},
		// Isolated until an operator resets it: no retry time (-1), never
		// the policy's OpenFor nor a 292-year countdown.
		{"isolated", func() { _ = reg.Isolate("billing") }, "warn", "open", -1},
		{"reset again", func() { reg.Reset("billing") }, "pass", "closed", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.act()
			if err := reg.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			resp, body := get(t, srv.URL+"/breakers/status.json")
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var d statuspage.Document
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatal(err)
			}
			if d.Schema != statuspage.Schema || d.Health != tc.wantHealth || len(d.Dependencies) != 2 {
				t.Fatalf("document = %+v", d)
			}
			b, s := d.Dependencies[0], d.Dependencies[1]
			if b.Name != "billing" || b.State != tc.wantBilling || b.RetryAfterSeconds != tc.wantRetry {
				t.Errorf("billing = %+v, want state %s retry %v", b, tc.wantBilling, tc.wantRetry)
			}
			if s.FailureRate == nil || *s.FailureRate != 0.25 || s.Counts.Successes != 3 || s.Counts.Failures != 1 {
				t.Errorf("search = %+v, want failure rate 0.25 over 3 ok / 1 failed", s)
			}

			resp, body = get(t, srv.URL+"/breakers/healthz")
			if resp.StatusCode != http.StatusOK {
				t.Errorf("health status code %d: an open breaker must never take the agent out of service", resp.StatusCode)
			}
			var hd statuspage.Health
			if err := json.Unmarshal([]byte(body), &hd); err != nil {
				t.Fatal(err)
			}
			if hd.Status != tc.wantHealth || len(hd.Checks[statuspage.HealthKey]) != 2 {
				t.Errorf("health = %+v, want %s", hd, tc.wantHealth)
			}
			if got := h.HealthDocument().Status; got != tc.wantHealth {
				t.Errorf("HealthDocument().Status = %s", got)
			}
		})
	}
	d := h.Document()
	var causes []string
	for _, tr := range d.Transitions {
		causes = append(causes, tr.Dependency+":"+tr.From+">"+tr.To+":"+tr.Cause)
	}
	if got, want := strings.Join(causes, " "), "billing:closed>open:retry_hint billing:open>closed:reset billing:closed>open:isolated billing:open>closed:reset"; got != want {
		t.Errorf("transitions = %q, want %q", got, want)
	}
}

func TestRoutesAndMethods(t *testing.T) {
	reg, _ := newRegistry(t)
	_, srv := newPage(t, reg)
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/breakers/", 200},
		{"HEAD", "/breakers/status.json", 200},
		{"POST", "/breakers/status.json", 405},
		{"GET", "/breakers/nope", 404},
		{"POST", "/breakers/actions/isolate", 404}, // actions disabled: they do not exist
		{"GET", "/breakers/healthz", 200},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	// Without the trailing slash the page redirects, so its relative links work.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(srv.URL + "/breakers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The mux (307) or the handler (301) redirects; either way to the slash.
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || loc != "/breakers/" {
		t.Errorf("GET /breakers = %d %q", resp.StatusCode, loc)
	}
}

func TestPageEscapesNamesAndHasNoButtonsByDefault(t *testing.T) {
	reg, _ := newRegistry(t)
	hostile := `<img src=x onerror="alert(1)">&<script>x</script>`
	if _, err := reg.Get(registry.Key(hostile)); err != nil {
		t.Fatal(err)
	}
	_, srv := newPage(t, reg)
	resp, body := get(t, srv.URL+"/breakers/")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>x</script>") {
		t.Error("the page renders a dependency name as markup")
	}
	if !strings.Contains(body, "&lt;img src=x onerror=") {
		t.Error("the page does not show the hostile name as text")
	}
	if strings.Contains(body, "<th>Operator</th>") {
		t.Error("operator column present although actions are disabled")
	}
	for _, ext := range []string{"http://", "https://", "//cdn", "<link "} {
		if strings.Contains(body, ext) && !strings.Contains(body, "http://www.w3.org/2000/svg") {
			t.Errorf("page references an external resource (%q)", ext)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP = %q", csp)
	}
}

func TestActions(t *testing.T) {
	reg, _ := newRegistry(t)
	if _, err := reg.Get("billing"); err != nil {
		t.Fatal(err)
	}
	h, srv := newPage(t, reg, statuspage.WithActions(token))
	post := func(action, auth, dep string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/breakers/actions/"+action, strings.NewReader(url.Values{"dependency": {dep}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	state := func() registry.State { b, _ := reg.Lookup("billing"); return b.State() }

	for _, auth := range []string{"", "Bearer ", "Bearer wrong-token-wrong-token", "Basic " + token, "Bearer " + token + "x"} {
		if code := post("isolate", auth, "billing"); code != http.StatusUnauthorized {
			t.Errorf("isolate with %q = %d, want 401", auth, code)
		}
	}
	if state() != registry.StateClosed {
		t.Fatal("an unauthorised request changed the breaker")
	}
	if code := post("isolate", "Bearer "+token, "billing"); code != 200 || state() != registry.StateOpen {
		t.Fatalf("authorised isolate = %d, state %v", code, state())
	}
	if code := post("reset", "bearer "+token, "billing"); code != 200 || state() != registry.StateClosed {
		t.Fatalf("authorised reset = %d, state %v", code, state())
	}
	if code := post("isolate", "Bearer "+token, "invented"); code != 404 {
		t.Errorf("isolate of an unknown dependency = %d, want 404", code)
	}
	if _, ok := reg.Lookup("invented"); ok {
		t.Error("an action created a breaker")
	}
	if code := post("isolate", "Bearer "+token, ""); code != 400 {
		t.Errorf("isolate without a dependency = %d, want 400", code)
	}
	got := h.ActionStats()
	if want := (statuspage.ActionStats{Applied: 2, Unauthorized: 5, UnknownDependency: 1, Invalid: 1}); got != want {
		t.Errorf("ActionStats = %+v, want %+v", got, want)
	}
	_, body := get(t, srv.URL+"/breakers/")
	if !strings.Contains(body, "<th>Operator</th>") {
		t.Error("operator column absent although actions are enabled")
	}
}

// TestEventsPushTransitions reads the SSE stream: a document at once, and a
// new one as soon as a breaker opens, without waiting for the refresh period.
func TestEventsPushTransitions(t *testing.T) {
	reg, _ := newRegistry(t)
	b, _ := reg.Get("billing")
	_, srv := newPage(t, reg, statuspage.WithRefresh(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/breakers/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() statuspage.Document {
		t.Helper()
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var d statuspage.Document
				if err := json.Unmarshal([]byte(data), &d); err != nil {
					t.Fatal(err)
				}
				return d
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return statuspage.Document{}
	}
	if d := next(); d.Dependencies[0].State != "closed" {
		t.Fatalf("first event: %+v", d.Dependencies)
	}
	b.Trip(time.Minute, registry.CauseRetryHint)
	for {
		d := next()
		if d.Dependencies[0].State == "open" {
			if len(d.Transitions) != 1 || d.Transitions[0].Cause != "retry_hint" {
				t.Errorf("transitions = %+v", d.Transitions)
			}
			break
		}
	}
}

func TestMaxStreams(t *testing.T) {
	reg, _ := newRegistry(t)
	_, srv := newPage(t, reg, statuspage.WithMaxStreams(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/breakers/events", nil)
	first, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	resp, _ := get(t, srv.URL+"/breakers/events")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second stream = %d, want 503", resp.StatusCode)
	}
}

func TestDocumentShowsShadowMode(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy("billing", registry.Policy{
		ConsecutiveFailures: 1, Shadow: true, NoJitter: true,
	}))
	h, srv := newPage(t, reg)
	b, _ := reg.Get("billing")
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	for range 3 {
		if _, d := b.Admit(); !d.Allowed || !d.Shadow {
			t.Fatalf("shadow breaker refused: %+v", d)
		}
	}
	d := h.Document().Dependencies[0]
	if d.Mode != "shadow" || d.State != "open" || d.Counts.ShadowRefusals != 3 || d.Counts.ShortCircuits != 0 {
		t.Errorf("dependency = %+v", d)
	}
	if _, body := get(t, srv.URL+"/breakers/"); !strings.Contains(body, "shadow: 3 would-be refusals") {
		t.Error("the page does not show the shadow refusals")
	}
}

// TestStalledEventStreamIsCut: a client that opens /events and never reads
// is disconnected at the write timeout, so Close ends its stream and its
// slot is freed (review finding: it used to hold both forever).
func TestStalledEventStreamIsCut(t *testing.T) {
	reg, _ := newRegistry(t)
	for i := range 1000 { // a document large enough to fill the socket buffers
		if _, err := reg.Get(registry.Key(fmt.Sprintf("dependency-%04d-with-a-long-name-to-fill-the-buffers", i))); err != nil {
			t.Fatal(err)
		}
	}
	_, srv := newPage(t, reg, statuspage.WithRefresh(100*time.Millisecond), statuspage.WithMaxStreams(1),
		statuspage.WithWriteTimeout(300*time.Millisecond))
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /breakers/events HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Never read. The stalled stream is cut at its write timeout and the
	// single slot is free again: a second client gets its stream (poll: the
	// server's state is not ours to wait on otherwise).
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(srv.URL + "/breakers/events?probe")
		if err == nil {
			code := resp.StatusCode
			resp.Body.Close()
			if code == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled client still holds the only event-stream slot")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBadTokensDoNotFloodTheLog: every refused attempt is counted, but only
// the first is logged within a minute (review finding: one line per attempt);
// a minute later the next line says how many were left out.
func TestBadTokensDoNotFloodTheLog(t *testing.T) {
	reg, clk := newRegistry(t)
	if _, err := reg.Get("billing"); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	h, err := statuspage.New(reg, statuspage.WithActions(token),
		statuspage.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	refuse := func(n int) {
		for range n {
			resp, err := http.Post(srv.URL+"/actions/isolate", "application/x-www-form-urlencoded", strings.NewReader("dependency=billing"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	refuse(50)
	mu.Lock()
	lines := strings.Count(logs.String(), "operator action refused")
	mu.Unlock()
	if lines != 1 || h.ActionStats().Unauthorized != 50 {
		t.Errorf("%d log lines and %d counted for 50 bad attempts, want 1 and 50", lines, h.ActionStats().Unauthorized)
	}
	clk.Advance(time.Minute)
	refuse(1)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n := strings.Count(out, "operator action refused"); n != 2 || !strings.Contains(out, "unauthorized_total=51 suppressed=49") {
		t.Errorf("a minute later: %d lines, want 2, the second with unauthorized_total=51 suppressed=49:\n%s", n, out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestHoldEndedStaysOpen: when a breaker's hold ends and no call has come
// to probe it, the document and /healthz keep saying open (with a probe
// due), as Since, the transitions and the log do; the first call then
// moves it to half-open.
func TestHoldEndedStaysOpen(t *testing.T) {
	clk := registrytest.NewFakeClock(t0)
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy("billing", registry.Policy{
		ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true,
	}))
	h, _ := newPage(t, reg)
	b, _ := reg.Get("billing")
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	clk.Advance(11 * time.Second)
	if st := b.Status(); st.State != registry.StateHalfOpen || !st.HoldEnded {
		t.Fatalf("registry status = %+v, want half-open admission with HoldEnded", st)
	}
	d := h.Document().Dependencies[0]
	if d.State != "open" || !d.ProbeDue || d.RetryAfterSeconds != 0 {
		t.Errorf("document: state=%s probe_due=%v retry_after=%v, want open, true, 0", d.State, d.ProbeDue, d.RetryAfterSeconds)
	}
	if c := h.HealthDocument().Checks[statuspage.HealthKey][0]; c.ObservedValue != "open" {
		t.Errorf("healthz observed %q, want open", c.ObservedValue)
	}
	probe, dec := b.Admit()
	if !dec.Allowed || !probe.Probe() {
		t.Fatalf("the first call after the hold is not the probe: %+v", dec)
	}
	if d := h.Document().Dependencies[0]; d.State != "half_open" || d.ProbeDue {
		t.Errorf("after the probe is admitted: state=%s probe_due=%v, want half_open, false", d.State, d.ProbeDue)
	}
	probe.Done(registry.Success)
}
