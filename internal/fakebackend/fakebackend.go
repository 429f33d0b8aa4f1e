// Package fakebackend is an HTTP dependency on 127.0.0.1 that tests and
// samples switch between healthy and failing, counting every request that
// reaches it.
package fakebackend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is how the backend answers.
type Mode int

const (
	// Up answers 200 with a JSON body.
	Up Mode = iota
	// Down answers 503.
	Down
	// RateLimited answers 429 with Retry-After.
	RateLimited
	// NotFound answers 404 (a client error: not the dependency's fault).
	NotFound
)

// Server is a switchable loopback HTTP backend. Safe for concurrent use.
type Server struct {
	srv        *httptest.Server
	hits       atomic.Int64
	mode       atomic.Int32
	retryAfter atomic.Int64 // seconds, for RateLimited
	secret     atomic.Pointer[string]
	gate       atomic.Pointer[chan struct{}]

	closing   chan struct{}
	closeOnce sync.Once
}

// New starts a backend in mode Up. Close it when done.
func New() *Server {
	s := &Server{closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL returns the base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Hits returns how many requests reached the server.
func (s *Server) Hits() int64 { return s.hits.Load() }

// SetMode switches how the server answers.
func (s *Server) SetMode(m Mode) { s.mode.Store(int32(m)) }

// SetRetryAfter sets the Retry-After seconds sent in RateLimited mode.
func (s *Server) SetRetryAfter(d time.Duration) { s.retryAfter.Store(int64(d / time.Second)) }

// SetErrorBody makes failing responses carry body text (e.g. seeded secrets
// and injection strings that must never reach the model).
func (s *Server) SetErrorBody(body string) { s.secret.Store(&body) }

// SetGate makes every request wait until ch is closed (or the server
// closes) before it is answered; nil removes the gate.
func (s *Server) SetGate(ch chan struct{}) {
	if ch == nil {
		s.gate.Store(nil)
		return
	}
	s.gate.Store(&ch)
}

// Close stops the server, releasing hanging requests.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.srv.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	if g := s.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-s.closing:
		case <-r.Context().Done():
			return
		}
	}
	body := "upstream failure"
	if p := s.secret.Load(); p != nil {
		body = *p
	}
	switch Mode(s.mode.Load()) {
	case Down:
		http.Error(w, body, http.StatusServiceUnavailable)
	case RateLimited:
		w.Header().Set("Retry-After", strconv.FormatInt(s.retryAfter.Load(), 10))
		http.Error(w, body, http.StatusTooManyRequests)
	case NotFound:
		http.Error(w, body, http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "query": r.URL.RawQuery, "ok": true})
	}
}
