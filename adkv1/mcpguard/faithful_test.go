package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// sdkHTTP is a real go-sdk streamable HTTP server on 127.0.0.1 that can be
// stopped and restarted on the same port (a new process: every session
// forgotten), optionally answering an unknown session with 400 instead of
// the spec's 404 (as the TypeScript SDK's servers do). It records what the
// client sent.
type sdkHTTP struct {
	t        *testing.T
	addr     string
	answer40 bool // rewrite 404 to 400

	mu        sync.Mutex
	srv       *http.Server
	mcpSrv    *mcp.Server
	h         http.Handler
	noHeader  []string       // methods sent after the handshake without MCP-Protocol-Version
	methods   map[string]int // POSTed method → count
	forbidden string         // a method answered 403 insufficient_scope
}

func newSDKHTTP(t *testing.T, answer400 bool) *sdkHTTP {
	s := &sdkHTTP{t: t, answer40: answer400, methods: map[string]int{}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *sdkHTTP) url() string { return "http://" + s.addr + "/mcp" }

// start serves a fresh go-sdk server (no sessions) on s.addr (a new port
// the first time).
func (s *sdkHTTP) start() {
	s.t.Helper()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "v1"}, legacyServerOptions())
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		name, _ := res.Content["name"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + name}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{Handler: s}
	s.mu.Lock()
	s.addr, s.srv, s.mcpSrv, s.h = ln.Addr().String(), hs, srv, h
	s.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
}

// stop closes the listener and every connection: nothing listens at the
// address until start.
func (s *sdkHTTP) stop() {
	s.mu.Lock()
	hs := s.srv
	s.srv = nil
	s.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
}

func (s *sdkHTTP) restart() { s.stop(); s.start() }

func (s *sdkHTTP) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.methods[method]
}

func (s *sdkHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h, forbidden := s.h, s.forbidden
	s.mu.Unlock()
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		s.mu.Lock()
		if m.Method != "" {
			s.methods[m.Method]++
		}
		switch m.Method {
		case "initialize", "server/discover":
		default:
			if r.Header.Get("MCP-Protocol-Version") == "" {
				s.noHeader = append(s.noHeader, cmpOr(m.Method, "(response)"))
			}
		}
		s.mu.Unlock()
		if m.Method != "" && m.Method == forbidden {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="tools"`)
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	if s.answer40 {
		w = &status400{ResponseWriter: w}
	}
	h.ServeHTTP(w, r)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// status400 answers 400 where the go-sdk answers 404 (an unknown session).
type status400 struct{ http.ResponseWriter }

func (w *status400) WriteHeader(code int) {
	if code == http.StatusNotFound {
		code = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *status400) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func httpGuard(t *testing.T, reg *registry.Registry, srv mcpguard.Server) *mcpguard.Guard {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	g := mcpguard.MustNew(reg, []mcpguard.Server{srv})
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// TestGuardedHTTPKeepsSDKHooks: through mcpguard, over streamable HTTP, the
// go-sdk's client behaves as it does alone: every request after the
// handshake carries MCP-Protocol-Version (the spec's MUST), a server's
// tools/list_changed arrives and ends the cached list at once (not after
// ToolsTTL), and a server's elicitation request reaches the user's handler
// (Server.Client). mcpguard's connection wrapper hid the go-sdk's hook that
// records the negotiated version and opens the standalone stream, so none
// of the three held. On the ADK v2 line the server is a go-sdk v1.8.0
// server pinned to the legacy versions: it answers server/discover with 400
// and -32022, and Start must still succeed (it failed with
// connection_closed after three attempts).
func TestGuardedHTTPKeepsSDKHooks(t *testing.T) {
	s := newSDKHTTP(t, false)
	changed := make(chan struct{}, 8)
	var asked atomic.Int32
	hc := &http.Client{Transport: &http.Transport{}}
	g := httpGuard(t, testRegistry(t), mcpguard.Server{
		Name: "sdk", Required: true, Dial: mcpguard.StreamableHTTP(s.url(), hc),
		Client: &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			},
		},
	})
	ctx := t.Context()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tools, err := discover(t, ctx, g, "inv-1")
	if err != nil || tools["echo"] == nil {
		t.Fatalf("tools = %v, %v", tools, err)
	}
	if _, err := tools["echo"].Run(newToolCtx(ctx), map[string]any{"text": "x"}); err != nil {
		t.Fatalf("echo: %v", err)
	}
	out, err := tools["ask"].Run(newToolCtx(ctx), map[string]any{})
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	if got := asked.Load(); got != 1 || !strings.Contains(toJSON(out), "accept:ada") {
		t.Errorf("elicitation: handler asked %d times, result %s; want once, accept:ada", got, toJSON(out))
	}

	s.mu.Lock()
	missing := append([]string(nil), s.noHeader...)
	s.mu.Unlock()
	if len(missing) > 0 {
		t.Errorf("requests after the handshake without MCP-Protocol-Version: %v", missing)
	}

	// The server adds a tool: its list_changed must reach the client.
	s.mu.Lock()
	srv := s.mcpSrv
	s.mu.Unlock()
	mcp.AddTool(srv, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	// (The server debounces its notices by 10ms: one for the tools it was
	// created with may arrive first; wait for the one that names "late".)
	timeout := time.After(10 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("tools/list_changed never reached the client (tools %v)", keys(tools))
		}
		tools, err = discover(t, ctx, g, fmt.Sprintf("inv-%d", 2+i))
		if err != nil {
			t.Fatal(err)
		}
		if tools["late"] != nil {
			break // offered at once, not after ToolsTTL (5m)
		}
	}

}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRestartSamePortAfterOutage: the server's process stops (connection
// refused) and a new one listens on the same port, answering the old
// session with 400 as the TypeScript SDK does. The refused connection drops
// the session (Health.Connected false), so the half-open probe after the
// hold starts a new session and succeeds at its first attempt, closing the
// breaker. Before, the probe went out on the dead session, got 400
// (transport_error), failed, and doubled the hold.
func TestRestartSamePortAfterOutage(t *testing.T) {
	s := newSDKHTTP(t, true)
	clk, reg := clockRegistry(t, registry.WithPolicy("ts", registry.Policy{
		ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, ProbeLease: 2 * time.Minute,
	}))
	tr := &http.Transport{}
	g := httpGuard(t, reg, mcpguard.Server{Name: "ts", Dial: mcpguard.StreamableHTTP(s.url(), &http.Client{Transport: tr}),
		Retry: mcpguard.Retry{MaxAttempts: 1}})
	ctx := t.Context()
	tools, err := discover(t, ctx, g, "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	echo := tools["echo"]
	if _, err := echo.Run(newToolCtx(ctx), map[string]any{"text": "a"}); err != nil {
		t.Fatal(err)
	}
	s.stop()
	tr.CloseIdleConnections() // the pool noticed: the next request dials, and is refused
	_, err = echo.Run(newToolCtx(ctx), map[string]any{"text": "b"})
	if e := asError(t, err); e.Reason != mcpguard.ReasonConnectionRefused {
		t.Fatalf("during the outage: %v (reason %s), want connection_refused", err, e.Reason)
	}
	if h := g.Health()[0]; h.Connected {
		t.Error("after connection refused: Health.Connected = true; the session of a process that is gone must be dropped")
	}
	br, _ := reg.Get("ts")
	if br.State() != registry.StateOpen {
		t.Fatalf("breaker %s, want open", br.State())
	}
	s.start() // a new process on the same port: it knows no session
	clk.Advance(10 * time.Second)
	out, err := echo.Run(newToolCtx(ctx), map[string]any{"text": "c"})
	if err != nil {
		t.Fatalf("the half-open probe after the restart failed: %v", err)
	}
	if !strings.Contains(toJSON(out), "c") || br.State() != registry.StateClosed {
		t.Errorf("probe: %s, breaker %s; want the answer and a closed breaker", toJSON(out), br.State())
	}
}

// TestUnknownSession400RenewedWhileIdle: the server restarts on the same
// port while the guard is idle, and answers the old session with 400 (not
// 404). The first call renews the session and is sent again on it (the
// server refused it before running it), and succeeds; the tool ran once.
// Before, the call failed with transport_error.
func TestUnknownSession400RenewedWhileIdle(t *testing.T) {
	s := newSDKHTTP(t, true)
	tr := &http.Transport{}
	g := httpGuard(t, testRegistry(t), mcpguard.Server{Name: "ts", Dial: mcpguard.StreamableHTTP(s.url(), &http.Client{Transport: tr}),
		Retry: mcpguard.Retry{MaxAttempts: 1}})
	ctx := t.Context()
	tools, err := discover(t, ctx, g, "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	before := s.count("initialize")
	if before == 0 {
		t.Skip("the server keeps no session on this protocol")
	}
	s.restart()
	// Idle: the client's pool has noticed that the old process closed its
	// keep-alive connections (a POST on one of those fails with EOF, which
	// may have reached a server and is not repeated).
	tr.CloseIdleConnections()
	if _, err := tools["echo"].Run(newToolCtx(ctx), map[string]any{"text": "a"}); err != nil {
		t.Fatalf("first call after an idle restart: %v; cause %v", err, errors.Unwrap(err))
	}
	if got := s.count("initialize") - before; got != 1 {
		t.Errorf("new sessions = %d, want 1", got)
	}
}

// TestAuthFailureNotRetried: a server that refuses our credentials (401) is
// not retried as a transport fault, and its breaker is not charged: a
// guarded connect makes no more requests than the bare go-sdk client's
// one connect. A 403 insufficient_scope on tools/list is not retried either.
func TestAuthFailureNotRetried(t *testing.T) {
	var n atomic.Int32
	ts := newLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	bare := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "v1"}, nil)
	if _, err := bare.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts, DisableStandaloneSSE: true}, nil); err == nil {
		t.Fatal("bare connect succeeded")
	}
	bareN := n.Swap(0)

	reg := testRegistry(t)
	g := httpGuard(t, reg, mcpguard.Server{Name: "auth", Required: true, Dial: mcpguard.StreamableHTTP(ts, nil)})
	err := g.Start(t.Context())
	e := asError(t, err)
	if e.Class != mcpguard.ClassAuth || e.Reason != mcpguard.ReasonUnauthorized || e.Attempts != 1 {
		t.Errorf("Start: %v (class %s, reason %s, %d attempts), want auth/unauthorized, 1 attempt", err, e.Class, e.Reason, e.Attempts)
	}
	if got := n.Load(); got > bareN {
		t.Errorf("guarded connect made %d requests, the bare client %d", got, bareN)
	}
	br, _ := reg.Get("auth")
	if c := br.Counts(); c.Failures != 0 {
		t.Errorf("breaker charged %d failures for an auth refusal", c.Failures)
	}

	// 403 insufficient_scope on tools/list only.
	s := newSDKHTTP(t, false)
	s.mu.Lock()
	s.forbidden = "tools/list"
	s.mu.Unlock()
	g2 := httpGuard(t, testRegistry(t), mcpguard.Server{Name: "scope", Required: true, Dial: mcpguard.StreamableHTTP(s.url(), nil)})
	err = g2.Start(t.Context())
	if e := asError(t, err); e.Class != mcpguard.ClassAuth || e.Reason != mcpguard.ReasonForbidden {
		t.Errorf("403 on tools/list: %v (class %s reason %s), want auth/forbidden", err, e.Class, e.Reason)
	}
	if got := s.count("tools/list"); got != 1 {
		t.Errorf("tools/list sent %d times, want 1 (not retried)", got)
	}
}

func newLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

var _ = errors.New
