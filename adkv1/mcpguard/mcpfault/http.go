package mcpfault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type httpState struct {
	ts         *httptest.Server
	refusedURL string
	// resume holds answers of streams ended by StreamRetry, by event id.
	mu      sync.Mutex
	resume  map[string][]byte            // Guarded by mu.
	eventID int                          // Guarded by mu.
	handler atomic.Pointer[http.Handler] // the go-sdk's handler; replaced by RestartHTTP
}

func (h *httpState) close() {
	h.ts.CloseClientConnections()
	h.ts.Close()
}

// StartHTTP serves the server over streamable HTTP (JSON responses) on
// 127.0.0.1 and returns its endpoint. It is idempotent. Close stops it.
// A Legacy server keeps sessions (Mcp-Session-Id); any other is served
// statelessly, as a server of the sessionless protocol is.
func (s *Server) StartHTTP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.web != nil {
		return s.web.ts.URL
	}
	web := &httpState{refusedURL: refusedURL(), resume: map[string][]byte{}}
	web.handler.Store(s.streamableHandler())
	web.ts = httptest.NewServer(s.httpFaults(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*web.handler.Load()).ServeHTTP(w, r)
	})))
	s.web = web
	return web.ts.URL
}

func (s *Server) streamableHandler() *http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: !s.cfg.Legacy})
	return &h
}

// RestartHTTP simulates a restart of the HTTP server on the same address:
// every session is forgotten (on a Legacy server, requests that name one get
// HTTP 404, as the MCP spec requires) and open client connections are
// closed. Executions and request counts are kept.
func (s *Server) RestartHTTP() {
	s.mu.Lock()
	web := s.web
	inProcess := make(map[*mcp.ServerSession]bool, len(s.sessions))
	for _, ss := range s.sessions {
		inProcess[ss] = true
	}
	s.mu.Unlock()
	if web == nil {
		return
	}
	web.handler.Store(s.streamableHandler())
	web.ts.CloseClientConnections()
	for ss := range s.srv.Sessions() {
		if !inProcess[ss] {
			_ = ss.Close() // the old process's sessions end with it
		}
	}
}

// refusedURL returns a loopback URL nothing listens on.
func refusedURL() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "http://127.0.0.1:1"
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

// HTTPDial returns a Dial function (for mcpguard.Server.Dial) that connects
// over streamable HTTP with client (nil: http.DefaultClient), starting the
// HTTP server if needed. In Unreachable mode it dials a loopback port that
// nothing listens on, so the connection is really refused.
func (s *Server) HTTPDial(client *http.Client) func(context.Context) (mcp.Transport, error) {
	url := s.StartHTTP()
	s.mu.Lock()
	refused := s.web.refusedURL
	s.mu.Unlock()
	retries := -1 // no stream resumption: every fault is the client's to handle
	if s.cfg.StreamRetry != "" {
		retries = 0 // the go-sdk's default: StreamRetry streams must be resumed
	}
	return func(context.Context) (mcp.Transport, error) {
		ep := url
		if s.Mode() == Unreachable {
			ep = refused
		}
		return &mcp.StreamableClientTransport{Endpoint: ep, HTTPClient: client, MaxRetries: retries, DisableStandaloneSSE: true}, nil
	}
}

// serveResumed serves the answer of a stream ended by StreamRetry to the
// GET that resumes it, and reports whether r was such a GET.
func (s *Server) serveResumed(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Last-Event-ID")
	s.mu.Lock()
	web := s.web
	s.mu.Unlock()
	web.mu.Lock()
	body, ok := web.resume[id]
	delete(web.resume, id)
	web.mu.Unlock()
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "id: %s-answer\ndata: %s\n\n", id, body)
	return true
}

// httpFaults applies the modes to HTTP requests.
func (s *Server) httpFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && s.cfg.StreamRetry != "" && s.serveResumed(w, r) {
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var peek struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &peek)
		if err := s.sleep(r.Context(), s.latencyOf(peek.Method)); err != nil {
			return
		}
		mode := s.Mode()
		switch {
		case mode == Blackhole:
			select { // accepted, never answered
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		case peek.Method == methodDiscover && s.cfg.Legacy:
			// An old server answers with an error and, the request not being
			// an initialize, no session.
			s.refuseDiscover()
			if req, ok := decodeRequest(body); ok {
				if data, err := jsonrpc.EncodeMessage(discoverRefusal(req.ID)); err == nil {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(data)
					return
				}
			}
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		case peek.Method == "tools/call" && mode == Flapping && s.flapDown():
			if s.cfg.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((s.cfg.RetryAfter+time.Second-1)/time.Second)))
			}
			code := http.StatusServiceUnavailable
			if s.cfg.FlapStatus != 0 {
				code = s.cfg.FlapStatus
			}
			http.Error(w, "flapping: down", code)
			return
		case peek.Method == "tools/call" && s.cfg.StreamRetry != "" &&
			(len(s.cfg.StreamRetryTools) == 0 || slices.Contains(s.cfg.StreamRetryTools, peek.Params.Name)):
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r) // the tool runs; its answer waits for the resumption
			s.mu.Lock()
			web := s.web
			s.mu.Unlock()
			web.mu.Lock()
			web.eventID++
			id := strconv.Itoa(web.eventID)
			web.resume[id] = bytes.TrimSpace(rec.Body.Bytes())
			web.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "id: %s\nretry: %s\n\n", id, s.cfg.StreamRetry)
			return // the stream ends: the client must wait and resume
		case peek.Method == "tools/call" && mode == Dropped:
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r) // the tool runs; its response is lost
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		case peek.Method == "tools/call" && (mode == Malformed || mode == Truncated):
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			res := rec.Result()
			for k, v := range res.Header {
				w.Header()[k] = v
			}
			out := rec.Body.Bytes()
			if mode == Malformed {
				out = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, peek.ID, malformedResult))
				w.Header().Set("Content-Length", strconv.Itoa(len(out)))
				w.WriteHeader(res.StatusCode)
				_, _ = w.Write(out)
				return
			}
			// Truncated: promise the whole body, send half, hang up.
			hj, ok := w.(http.Hijacker)
			if !ok {
				return
			}
			conn, buf, err := hj.Hijack()
			if err != nil {
				return
			}
			fmt.Fprintf(buf, "HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", res.StatusCode, len(out))
			if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
				fmt.Fprintf(buf, "Mcp-Session-Id: %s\r\n", sid)
			}
			buf.WriteString("\r\n")
			_, _ = buf.Write(out[:len(out)/2])
			_ = buf.Flush()
			_ = conn.Close()
			return
		}
		next.ServeHTTP(w, r)
	})
}

func decodeRequest(body []byte) (*jsonrpc.Request, bool) {
	m, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	r, ok := m.(*jsonrpc.Request)
	return r, ok
}
