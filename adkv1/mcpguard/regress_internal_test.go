package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/registry"
)

// rawMCPServer is a minimal streamable HTTP MCP server of the legacy
// protocol (before 2026-07-28: a current client's server/discover is an
// unknown method, and it falls back) with one tool,
// "charge", whose executions are counted. Each initialize opens a new
// session ("s1", "s2", …). onCall answers a tools/call of a known session
// after the tool ran (or decided not to run); GET (stream resumption) answers
// onGet.
type rawMCPServer struct {
	execs, gets atomic.Int32
	sessions    atomic.Int32
	// callFor decides what a tools/call with session id sid gets. It
	// returns false when the request is answered 404 without running.
	callFor func(sid string) (run bool, sse bool)
}

func (rs *rawMCPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		rs.gets.Add(1)
		http.NotFound(w, r) // the session is gone (the replica restarted)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &m)
	sid := r.Header.Get("Mcp-Session-Id")
	reply := func(sid string, result any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", sid)
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}
	switch m.Method {
	case "initialize":
		sid = fmt.Sprintf("s%d", rs.sessions.Add(1))
		reply(sid, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "raw", "version": "1"}})
	case "tools/list":
		reply(sid, map[string]any{"tools": []any{map[string]any{"name": "charge", "inputSchema": map[string]any{"type": "object"}}}})
	case "tools/call":
		run, sse := rs.callFor(sid)
		if !run {
			http.NotFound(w, r) // session unknown: the request is refused unread
			return
		}
		rs.execs.Add(1) // the side effect happens
		if sse {
			// Accepted: a priming event (an id only), then the stream drops
			// before the response. The client resumes with Last-Event-ID
			// and gets 404.
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", sid)
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "id: ev1\nretry: 10\ndata:\n\n")
			w.(http.Flusher).Flush()
			return
		}
		reply(sid, map[string]any{"content": []any{map[string]any{"type": "text", "text": "charged"}}})
	default:
		if len(m.ID) > 0 { // a request: an old server knows no server/discover
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": jsonrpc.CodeMethodNotFound, "message": "method not found"}})
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}

func rawGuard(t *testing.T, rs *rawMCPServer, srv Server) (*server, *Tool) {
	t.Helper()
	ts := httptest.NewServer(rs)
	t.Cleanup(ts.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	srv.Name, srv.Dial = "pay", StreamableHTTP(ts.URL, &http.Client{Transport: tr})
	g := MustNew(reg, []Server{srv})
	t.Cleanup(func() { _ = g.Close() })
	s := g.servers[0]
	tools, err := s.tools(t.Context())
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools = %v, %v", tools, err)
	}
	return s, tools[0]
}

// TestSessionMissingAfterSendNotRetried: go-sdk v1.4.1 reports
// ErrSessionMissing also for a tools/call it sent and the server accepted,
// when the SSE response drops after an event id and the resumption GET gets
// 404. The tool ran; the result is unknown. A tool not declared idempotent
// must not be sent again; an idempotent one may be.
func TestSessionMissingAfterSendNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent []string
		execs      int32
	}{
		{"not_idempotent", nil, 1},
		{"idempotent", []string{"charge"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &rawMCPServer{callFor: func(string) (bool, bool) { return true, true }}
			s, charge := rawGuard(t, rs, Server{OperationBudget: 5 * time.Second, IdempotentTools: tc.idempotent})
			_, err := s.call(t.Context(), charge, map[string]any{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if !errors.Is(err, mcp.ErrSessionMissing) || e.Reason != ReasonSessionMissing {
				t.Fatalf("err = %v (reason %s, cause %v), want session missing from the resumption", err, e.Reason, e.Cause)
			}
			if rs.gets.Load() == 0 {
				t.Error("no resumption GET: the test does not exercise the resumed stream")
			}
			if n := rs.execs.Load(); n != tc.execs {
				t.Errorf("tool executed %d times, want %d", n, tc.execs)
			}
			if e.Attempts != int(tc.execs) {
				t.Errorf("attempts = %d, want %d", e.Attempts, tc.execs)
			}
		})
	}
}

// TestSessionMissingBeforeSendRetried: a tools/call whose own POST is answered
// 404 (the server no longer knows the session) never ran: it is resent on a
// new session even for a tool that is not idempotent, and runs once.
func TestSessionMissingBeforeSendRetried(t *testing.T) {
	rs := &rawMCPServer{callFor: func(sid string) (bool, bool) { return sid != "s1", false }}
	s, charge := rawGuard(t, rs, Server{OperationBudget: 5 * time.Second})
	out, err := s.call(t.Context(), charge, map[string]any{})
	if err != nil {
		t.Fatalf("err = %v, want a result on a new session", err)
	}
	if out[KeyOutput] == nil {
		t.Errorf("out = %v", out)
	}
	if n := rs.execs.Load(); n != 1 {
		t.Errorf("tool executed %d times, want 1", n)
	}
	if n := rs.sessions.Load(); n != 2 {
		t.Errorf("sessions = %d, want 2 (a reconnect)", n)
	}
	if r := s.health().Retries; r != 0 {
		t.Errorf("retries = %d, want 0 (a new session is not a retry: it takes nothing from the retry budget)", r)
	}
}

// TestNotSentNeedsAFailedWrite pins notSent's rule: the error's identity
// alone never proves a request unsent; a recorded successful write always
// makes it "sent".
func TestNotSentNeedsAFailedWrite(t *testing.T) {
	missing := fmt.Errorf("calling %q: %w", "tools/call", mcp.ErrSessionMissing)
	closing := fmt.Errorf("%w: calling %q: jsonrpc2: client is closing", mcp.ErrConnectionClosed, "tools/call")
	clientClosing := &jsonrpc.Error{Code: codeClientClosing, Message: "client is closing"}
	dropped := fmt.Errorf("%w: EOF", mcp.ErrConnectionClosed)
	gc := &guardConn{}
	for _, tc := range []struct {
		name  string
		err   error
		write int32
		gc    *guardConn
		want  bool
	}{
		{"missing/write_failed", missing, writeFailed, gc, true},
		{"missing/never_written", missing, writeNone, gc, true},
		{"missing/written", missing, writeDone, gc, false},
		{"closing/never_written", closing, writeNone, gc, true},
		{"closing/written", closing, writeDone, gc, false},
		{"client_closing/write_failed", clientClosing, writeFailed, gc, true},
		{"dropped/write_failed", dropped, writeFailed, gc, false},
		{"missing/caller_session", missing, writeFailed, nil, false},
	} {
		h := &hintHolder{}
		h.write.Store(tc.write)
		if got := notSent(tc.err, h, tc.gc); got != tc.want {
			t.Errorf("%s: notSent = %v, want %v", tc.name, got, tc.want)
		}
	}
	h := &hintHolder{}
	h.wrote(nil)
	h.wrote(errors.New("later failure"))
	if h.write.Load() != writeDone {
		t.Error("a request written once must stay written")
	}
}

// TestJoinedDialKeepsRetryAfter: an operation that joined a dial which got a
// Retry-After waits it out from the end of that dial, like the dial's own
// caller: both retry at exactly the same moment, never earlier (virtual
// time).
func TestJoinedDialKeepsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var dials []time.Duration
		dial := func(ctx context.Context) (mcp.Transport, error) {
			mu.Lock()
			dials = append(dials, time.Since(start))
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			RecordRetryAfter(ctx, time.Second)
			return nil, errors.New("503 Service Unavailable")
		}
		reg, err := registry.New()
		if err != nil {
			t.Fatal(err)
		}
		g := MustNew(reg, []Server{{Name: "srv", Dial: dial, OperationBudget: 5 * time.Second,
			Retry: Retry{MaxAttempts: 2}}}, WithRand(func() float64 { return 0 }))
		defer g.Close()
		s := g.servers[0]
		tl := &Tool{srv: s, name: "get", remote: "get", idempotent: true}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.call(t.Context(), tl, map[string]any{}) })
			time.Sleep(20 * time.Millisecond) // the second joins the first's dial
		}
		wg.Wait()
		// One shared dial at 0 (answered at 100ms, Retry-After 1s), then one
		// shared retry at 1.1s.
		if want := []time.Duration{0, 1100 * time.Millisecond}; fmt.Sprint(dials) != fmt.Sprint(want) {
			t.Errorf("dials at %v, want %v", dials, want)
		}
		for i, err := range errs {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("call %d: err = %v, want *Error", i, err)
			}
			if e.RetryAfter != time.Second || e.Attempts != 2 {
				t.Errorf("call %d: retry_after = %s, attempts = %d; want 1s, 2", i, e.RetryAfter, e.Attempts)
			}
		}
	})
}

// TestJoinedDialKeepsRetryAfterHTTP is TestJoinedDialKeepsRetryAfter over
// streamable HTTP: every handshake request (server/discover or initialize)
// answers 503 with Retry-After: 1 after 100ms; the operation that joined the
// dial must not send a handshake again within the server's delay, and
// neither may the go-sdk's fallback from server/discover to initialize.
func TestJoinedDialKeepsRetryAfterHTTP(t *testing.T) {
	var mu sync.Mutex
	var inits []time.Time
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		if m.Method == "initialize" || m.Method == "server/discover" {
			mu.Lock()
			inits = append(inits, time.Now())
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	g := MustNew(reg, []Server{{Name: "srv", Dial: StreamableHTTP(ts.URL, &http.Client{Transport: tr}),
		OperationBudget: 5 * time.Second, Retry: Retry{MaxAttempts: 2}}})
	defer g.Close()
	s := g.servers[0]
	tl := &Tool{srv: s, name: "get", remote: "get", idempotent: true}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = s.call(t.Context(), tl, map[string]any{}) })
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(inits) < 2 {
		t.Fatalf("handshake sent %d times, want a shared first dial and a retry", len(inits))
	}
	// The first 503 is answered 100ms after inits[0] with Retry-After 1s.
	for i, at := range inits[1:] {
		if d := at.Sub(inits[0]); d < 1100*time.Millisecond {
			t.Errorf("handshake #%d sent %s after the first, inside the server's Retry-After", i+1, d.Round(time.Millisecond))
		}
	}
}
