package mcpguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Server is the declared policy of one MCP server. It is plain data: keep it
// in tables or configuration. A zero field means its documented default.
type Server struct {
	// Name is the server's dependency key: the breaker key, and what its
	// tools report from DependencyKey. Required; must be a valid registry.Key.
	Name string
	// Capability is what the model is told is missing when the server is
	// optional and unavailable ("weather forecasts"). If empty, Name.
	Capability string
	// Required: a server that cannot be reached fails Toolset.Tools (the
	// turn) and Guard.Start (assembly) with an *Error. An optional server is
	// left out instead, and the model is told which capability is missing.
	Required bool

	// Dial returns a fresh transport for each (re)connection: transports are
	// single-use. Exactly one of Dial and Session must be set.
	Dial func(ctx context.Context) (mcp.Transport, error)
	// Session is a session the caller owns: it is used as is, never closed
	// and never re-established. Prefer Dial.
	Session *mcp.ClientSession

	// Client holds the client-side handlers the server may need: an
	// ElicitationHandler (the server asks the user for input), a
	// CreateMessageHandler (sampling), a LoggingMessageHandler, a
	// ProgressNotificationHandler, and so on. The guard builds its one
	// go-sdk client for the server from a copy of it, and every
	// reconnection reuses that client, so the handlers survive
	// reconnection. A ToolListChangedHandler is called after the guard's
	// own (which ends the cached tool list). Without one, the go-sdk
	// answers a server's elicitation or sampling request at once with an
	// error, as it does for any client without the handler.
	//
	// Time spent in an ElicitationHandler or CreateMessageHandler (a person
	// answering) is not charged to the server: a leg that runs out of time
	// while one of them runs, or after one ran during it, ends as
	// ClassCancelled with ReasonClientHandler (not retried, excluded from
	// the breaker). It still counts against CallTimeout and
	// OperationBudget, which bound how long the model waits: size
	// CallTimeout for the person. See docs/mcp.md.
	Client *mcp.ClientOptions
	// Roots are the roots the client offers the server (roots/list).
	// MCP deprecates roots as of protocol version 2026-07-28 (SEP-2577);
	// servers on older versions still ask for them.
	Roots []*Root

	// CountAuthFailures makes an authorization failure (HTTP 401 or 403,
	// or a failed OAuth flow: ClassAuth) a failure of the server's breaker.
	// By default it is excluded: the server answered; the credentials are
	// what failed, and the breaker counts outages. Never retried either
	// way.
	CountAuthFailures bool

	// ConnectTimeout bounds the handshake (transport dial, initialize and
	// the initialized confirmation). If 0, 5s.
	ConnectTimeout time.Duration
	// DiscoveryTimeout bounds tools/list, all pages together. If 0, 10s.
	DiscoveryTimeout time.Duration
	// CallTimeout bounds one tools/call leg. If 0, 30s.
	CallTimeout time.Duration
	// OperationBudget is the one budget of an operation (a discovery or a
	// call): connect, every list page, a reconnect, every retry and every
	// backoff spend it, and the run's own deadline narrows it further. If 0,
	// 45s.
	OperationBudget time.Duration
	// MinLeg is the least time a leg is granted. With less left, the
	// operation refuses to send (ErrBudgetExhausted) rather than send with
	// no time to answer. If 0, 50ms.
	MinLeg time.Duration

	// Retry configures retries. The handshake and the tool list are retried;
	// a tool call only when it is safe to repeat (IdempotentTools).
	Retry Retry

	// Breaker, if set, is the breaker policy the registry must hold for Name;
	// install it with RegistryOptions. New checks it is installed.
	Breaker *registry.Policy

	// Tools allowlists the server's tools by their name on the server. If
	// empty, every tool is admitted (up to MaxTools).
	Tools []string
	// IdempotentTools is the operator's allowlist of tools (names on the
	// server) that are safe to call twice. Only they are retried after a
	// fault; any other call is sent at most once by this layer.
	IdempotentTools []string
	// Trusted lets the server's own annotations.idempotentHint mark a tool
	// idempotent. Hints from untrusted servers are ignored.
	Trusted bool
	// MaxTools caps the tools admitted from the server. If 0, 128.
	MaxTools int
	// MaxPages caps the tools/list pages read in one discovery. If 0, 100.
	MaxPages int
	// ToolPrefix is prepended to every tool name declared to the model
	// ("weather_"), so that two servers exposing the same tool name do not
	// collide. The server is always called with its own name.
	ToolPrefix string
	// ToolsTTL is how long a discovered tool list is reused before tools/list
	// is asked again; a tools/list_changed notification ends it early. If 0,
	// 5m. The last good list is also what an unreachable server's tools are
	// served from. Measured on the registry's clock.
	ToolsTTL time.Duration
	// NoLastGood disables serving the last good tool list when the server
	// cannot be reached or its breaker is open; its tools are then left out.
	NoLastGood bool

	// MaxResultBytes caps a response's result, in bytes of JSON. A larger
	// one is a protocol fault and nothing of it is passed on. If 0, 256 KiB.
	MaxResultBytes int
	// ToolErrorDetail adds a sanitised excerpt (at most 256 bytes, through
	// redact.Text: invisible characters dropped, secrets, URLs, internal
	// addresses and instruction phrases redacted) of an isError result's
	// text to what the model sees, labelled untrusted. By
	// default the model gets only the fact that the tool reported an error.
	ToolErrorDetail bool
}

// Retry configures retries of one server's operations.
type Retry struct {
	// MaxAttempts is the number of attempts, the first included. If 0, 3.
	// 1 disables retries.
	MaxAttempts int
	// Base and Cap shape the backoff: retry n (from 0) waits a uniformly
	// random time in [0, min(Cap, Base·2ⁿ)) ("full jitter"). If 0, 100ms and
	// 2s. A delay the server asked for (Retry-After) replaces it and is waited
	// out exactly, or not at all when it would overrun the budget.
	Base, Cap time.Duration
	// BudgetRatio caps retries to this fraction of the server's operations
	// over BudgetWindow (on top of BudgetMin), so an outage does not
	// multiply load. In [0, 1]; if 0, 0.2 — a zero value cannot mean "no
	// ratio": set NoBudgetRatio for that.
	BudgetRatio float64
	// NoBudgetRatio removes the ratio: only BudgetMin retries are allowed per
	// BudgetWindow, however many operations there are. BudgetRatio must then
	// be 0.
	NoBudgetRatio bool
	// BudgetMin retries are always allowed per BudgetWindow. If 0, 3.
	BudgetMin int
	// BudgetWindow is the retry budget's sliding window, on the registry's
	// clock. If 0, 10s.
	BudgetWindow time.Duration
}

// Defaults of a zero Server and Retry.
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultDiscoveryTimeout = 10 * time.Second
	DefaultCallTimeout      = 30 * time.Second
	DefaultOperationBudget  = 45 * time.Second
	DefaultMinLeg           = 50 * time.Millisecond
	DefaultMaxTools         = 128
	DefaultMaxPages         = 100
	DefaultToolsTTL         = 5 * time.Minute
	DefaultMaxResultBytes   = 256 << 10

	DefaultMaxAttempts  = 3
	DefaultRetryBase    = 100 * time.Millisecond
	DefaultRetryCap     = 2 * time.Second
	DefaultBudgetRatio  = 0.2
	DefaultBudgetMin    = 3
	DefaultBudgetWindow = 10 * time.Second
)

// WithDefaults returns s with every zero field replaced by its default.
func (s Server) WithDefaults() Server {
	if s.Capability == "" {
		s.Capability = s.Name
	}
	s.ConnectTimeout = cmp.Or(s.ConnectTimeout, DefaultConnectTimeout)
	s.DiscoveryTimeout = cmp.Or(s.DiscoveryTimeout, DefaultDiscoveryTimeout)
	s.CallTimeout = cmp.Or(s.CallTimeout, DefaultCallTimeout)
	s.OperationBudget = cmp.Or(s.OperationBudget, DefaultOperationBudget)
	s.MinLeg = cmp.Or(s.MinLeg, DefaultMinLeg)
	s.MaxTools = cmp.Or(s.MaxTools, DefaultMaxTools)
	s.MaxPages = cmp.Or(s.MaxPages, DefaultMaxPages)
	s.ToolsTTL = cmp.Or(s.ToolsTTL, DefaultToolsTTL)
	s.MaxResultBytes = cmp.Or(s.MaxResultBytes, DefaultMaxResultBytes)
	s.Retry = s.Retry.WithDefaults()
	return s
}

// WithDefaults returns r with every zero field replaced by its default.
func (r Retry) WithDefaults() Retry {
	r.MaxAttempts = cmp.Or(r.MaxAttempts, DefaultMaxAttempts)
	r.Base = cmp.Or(r.Base, DefaultRetryBase)
	r.Cap = cmp.Or(r.Cap, DefaultRetryCap)
	if r.BudgetRatio == 0 && !r.NoBudgetRatio {
		r.BudgetRatio = DefaultBudgetRatio
	}
	r.BudgetMin = cmp.Or(r.BudgetMin, DefaultBudgetMin)
	r.BudgetWindow = cmp.Or(r.BudgetWindow, DefaultBudgetWindow)
	return r
}

// Validate reports every problem with s at once, or nil. Zero fields are
// valid: they mean "default".
func (s Server) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if !registry.Key(s.Name).Valid() {
		bad("name", "must be a valid dependency key (1-%d bytes, no control characters), got %q", registry.MaxKeyLen, s.Name)
	}
	switch {
	case s.Dial == nil && s.Session == nil:
		bad("dial", "one of dial and session is required")
	case s.Dial != nil && s.Session != nil:
		bad("dial", "dial and session are mutually exclusive")
	}
	if s.Session != nil && (s.Client != nil || len(s.Roots) > 0) {
		bad("client", "client and roots apply to the guard's own sessions (Dial); a caller's Session keeps the handlers of the client that made it")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"connect_timeout", s.ConnectTimeout}, {"discovery_timeout", s.DiscoveryTimeout},
		{"call_timeout", s.CallTimeout}, {"operation_budget", s.OperationBudget},
		{"min_leg", s.MinLeg}, {"tools_ttl", s.ToolsTTL},
		{"retry.base", s.Retry.Base}, {"retry.cap", s.Retry.Cap}, {"retry.budget_window", s.Retry.BudgetWindow},
	} {
		if d.v < 0 {
			bad(d.field, "must be ≥ 0, got %s", d.v)
		}
	}
	for _, n := range []struct {
		field string
		v     int
	}{
		{"max_tools", s.MaxTools}, {"max_pages", s.MaxPages}, {"max_result_bytes", s.MaxResultBytes},
		{"retry.max_attempts", s.Retry.MaxAttempts}, {"retry.budget_min", s.Retry.BudgetMin},
	} {
		if n.v < 0 {
			bad(n.field, "must be ≥ 0, got %d", n.v)
		}
	}
	if r := s.Retry.BudgetRatio; r < 0 || r > 1 || math.IsNaN(r) {
		bad("retry.budget_ratio", "must be in [0, 1], got %v", r)
	} else if r != 0 && s.Retry.NoBudgetRatio {
		bad("retry.budget_ratio", "must be 0 with retry.no_budget_ratio, got %v", r)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d := s.WithDefaults()
	for _, leg := range []struct {
		field string
		v     time.Duration
	}{{"connect_timeout", d.ConnectTimeout}, {"discovery_timeout", d.DiscoveryTimeout}, {"call_timeout", d.CallTimeout}} {
		if leg.v < d.MinLeg {
			bad(leg.field, "must be ≥ min_leg (%s), got %s", d.MinLeg, leg.v)
		}
	}
	if d.OperationBudget < d.MinLeg {
		bad("operation_budget", "must be ≥ min_leg (%s), got %s", d.MinLeg, d.OperationBudget)
	}
	errs = append(errs, legErrs(s)...) // layers.go: the layered-timeout rule
	if d.Retry.Cap < d.Retry.Base {
		bad("retry.cap", "must be ≥ retry.base (%s), got %s", d.Retry.Base, d.Retry.Cap)
	}
	if d.MaxTools > 4096 {
		bad("max_tools", "must be ≤ 4096, got %d", d.MaxTools)
	}
	if s.Breaker != nil {
		if err := s.Breaker.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("breaker: %w", err))
		}
	}
	seen := map[string]bool{}
	for i, t := range s.Tools {
		if !validToolName(t) {
			bad(fmt.Sprintf("tools[%d]", i), "invalid tool name %q", t)
		}
		seen[t] = true
	}
	for i, t := range s.IdempotentTools {
		if !validToolName(t) {
			bad(fmt.Sprintf("idempotent_tools[%d]", i), "invalid tool name %q", t)
		}
		if len(s.Tools) > 0 && !seen[t] {
			bad(fmt.Sprintf("idempotent_tools[%d]", i), "%q is not in tools", t)
		}
	}
	if s.ToolPrefix != "" && !validDeclaredName(s.ToolPrefix+"x") {
		bad("tool_prefix", "must start with a letter or underscore and hold only letters, digits, '_', '.', '-', got %q", s.ToolPrefix)
	}
	return errors.Join(errs...)
}

// RegistryOptions returns registry.WithPolicy options for every server that
// declares a Breaker policy, to pass to registry.New.
func RegistryOptions(servers ...Server) []registry.Option {
	var out []registry.Option
	for _, s := range servers {
		if s.Breaker != nil {
			out = append(out, registry.WithPolicy(registry.Key(s.Name), *s.Breaker))
		}
	}
	return out
}

// validToolName accepts MCP tool names: 1-128 of [A-Za-z0-9_.-].
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validDeclaredName accepts function names models accept: 1-64 characters,
// a letter or underscore first, then letters, digits, '_', '.', '-'.
func validDeclaredName(s string) bool {
	if len(s) == 0 || len(s) > 64 || !validToolName(s) {
		return false
	}
	c := s[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
