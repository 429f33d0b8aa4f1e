package mcpguard

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// ServerHealth is a point-in-time view of one server, for dashboards and
// on-call.
type ServerHealth struct {
	// Server is the configured name; Required its policy.
	Server   string
	Required bool
	// State is the server's breaker state, and RetryAfter when it next admits
	// a call (zero when it admits now).
	State      registry.State
	RetryAfter time.Duration
	// Outcome is the class of the last operation: ok, fault, timeout,
	// protocol or refused (or budget_exhausted, unavailable, cancelled);
	// empty before the first.
	Outcome Class
	// Operation is the last operation (list_tools or call_tool); Boundary
	// and Limit say where it ended and which limit fired, if it failed.
	Operation Boundary
	Boundary  Boundary
	Limit     Limit
	// ConsecutiveFailures counts operations in a row that failed (fault,
	// timeout, protocol); an answer resets it.
	ConsecutiveFailures int
	// Retries is the number of retries made since the guard started.
	Retries uint64
	// Latency is the last operation's duration, At when it ended.
	Latency time.Duration
	At      time.Time
	// Tools is how many tools the last successful discovery admitted, and
	// Connected whether a session is open now.
	Tools     int
	Connected bool
}

// health is a server's running record. Safe for concurrent use.
type health struct {
	server   string
	required bool
	retries  atomic.Uint64

	mu          sync.Mutex
	outcome     Class         // Guarded by mu.
	operation   Boundary      // Guarded by mu.
	boundary    Boundary      // Guarded by mu.
	limit       Limit         // Guarded by mu.
	consecutive int           // Guarded by mu.
	latency     time.Duration // Guarded by mu.
	at          time.Time     // Guarded by mu.
	tools       int           // Guarded by mu.
}

// record stores an operation's outcome; tools < 0 leaves the count as is.
func (h *health) record(o *op, c Class, b Boundary, l Limit, tools int) {
	latency, at := time.Since(o.start), o.s.g.clock.Now()
	h.mu.Lock()
	h.outcome, h.operation, h.boundary, h.limit = c, o.operation, b, l
	h.latency, h.at = latency, at
	switch c {
	case ClassFault, ClassTimeout, ClassProtocol:
		h.consecutive++
	case ClassOK, ClassRefused:
		h.consecutive = 0
	}
	if tools >= 0 {
		h.tools = tools
	}
	h.mu.Unlock()
}

func (h *health) unavailable(operation Boundary, at time.Time) {
	h.mu.Lock()
	h.outcome, h.operation, h.boundary, h.limit, h.at = ClassUnavailable, operation, "", "", at
	h.latency = 0
	h.mu.Unlock()
}

func (h *health) retried() { h.retries.Add(1) }

func (s *server) health() ServerHealth {
	st := s.br.Status()
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return ServerHealth{
		Server: s.h.server, Required: s.h.required,
		State: st.State, RetryAfter: st.RetryAfter,
		Outcome: s.h.outcome, Operation: s.h.operation, Boundary: s.h.boundary, Limit: s.h.limit,
		ConsecutiveFailures: s.h.consecutive, Retries: s.h.retries.Load(),
		Latency: s.h.latency, At: s.h.at, Tools: s.h.tools, Connected: s.conn.connected(),
	}
}
