package mcpguard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Boundary names where in the MCP exchange an operation was when it ended.
type Boundary string

const (
	// BoundaryConnect is the handshake: dialling the transport, initialize and
	// the notifications/initialized confirmation.
	BoundaryConnect Boundary = "connect"
	// BoundaryListTools is tools/list, every page of it.
	BoundaryListTools Boundary = "list_tools"
	// BoundaryCallTool is one tools/call.
	BoundaryCallTool Boundary = "call_tool"
)

// Limit names the bound that ended an operation.
type Limit string

const (
	// LimitNone: no limit fired (the server failed or answered badly).
	LimitNone Limit = ""
	// LimitConnectTimeout: Server.ConnectTimeout bounded the handshake leg.
	LimitConnectTimeout Limit = "connect_timeout"
	// LimitDiscoveryTimeout: Server.DiscoveryTimeout bounded the tool list
	// (all pages together).
	LimitDiscoveryTimeout Limit = "discovery_timeout"
	// LimitCallTimeout: Server.CallTimeout bounded the tools/call leg.
	LimitCallTimeout Limit = "call_timeout"
	// LimitOperationBudget: the operation's one budget (Server.OperationBudget),
	// spent across every leg and retry, was the tightest bound.
	LimitOperationBudget Limit = "operation_budget"
	// LimitRunDeadline: the caller's own context deadline (the agent run) was
	// the tightest bound.
	LimitRunDeadline Limit = "run_deadline"
	// LimitMaxResultBytes: the response exceeded Server.MaxResultBytes.
	LimitMaxResultBytes Limit = "max_result_bytes"
)

// Class is the outcome class of an operation, as health and logs report it.
type Class string

const (
	// ClassOK: the server answered and the answer was usable.
	ClassOK Class = "ok"
	// ClassFault: the server or the transport failed (refused or dropped
	// connection, JSON-RPC internal error, HTTP 5xx/429).
	ClassFault Class = "fault"
	// ClassTimeout: a deadline we set fired while waiting for the server.
	ClassTimeout Class = "timeout"
	// ClassProtocol: the server answered with something that is not a valid
	// answer (malformed, truncated, oversized, outside its output schema).
	ClassProtocol Class = "protocol"
	// ClassRefused: the server answered no (invalid arguments, unknown tool,
	// an isError result). An answer, not a fault.
	ClassRefused Class = "refused"
	// ClassBudgetExhausted: the operation refused to send because its budget
	// or the run's deadline was spent. Not the server's fault.
	ClassBudgetExhausted Class = "budget_exhausted"
	// ClassUnavailable: the dependency's breaker refused the operation; the
	// server was not contacted.
	ClassUnavailable Class = "unavailable"
	// ClassCancelled: the caller cancelled, or the run's deadline passed
	// while waiting. Not the server's fault.
	ClassCancelled Class = "cancelled"
	// ClassAuth: the server refused our credentials (HTTP 401 or 403, or
	// the OAuth flow the go-sdk ran on a 401 failed). The server is up and
	// answering; repeating the request with the same credentials would get
	// the same answer. Not retried; excluded from the breaker unless
	// Server.CountAuthFailures.
	ClassAuth Class = "auth"
)

// Reason is a closed set of finer causes, for logs and dashboards.
type Reason string

const (
	ReasonConnectionRefused Reason = "connection_refused"
	ReasonConnectionClosed  Reason = "connection_closed"
	// ReasonSessionMissing: the server no longer knows the HTTP session
	// (404 to a request naming it). Only a legacy server keeps sessions;
	// on the sessionless protocol (go-sdk ≥ v1.7.0 and a current server)
	// it does not occur.
	ReasonSessionMissing    Reason = "session_missing"
	ReasonTransport         Reason = "transport_error"
	ReasonServerError       Reason = "server_error"
	ReasonDeadline          Reason = "deadline"
	ReasonInvalidParams     Reason = "invalid_params"
	ReasonUnknownMethod     Reason = "method_not_found"
	ReasonMalformed         Reason = "malformed_response"
	ReasonTruncated         Reason = "truncated_response"
	ReasonOversized         Reason = "oversized_response"
	ReasonSchemaViolation   Reason = "output_schema_violation"
	ReasonMissingStructured Reason = "missing_structured_content"
	ReasonBadProtocol       Reason = "unsupported_protocol"
	ReasonToolNotListed     Reason = "tool_not_listed"
	ReasonBudgetExhausted   Reason = "budget_exhausted"
	ReasonCancelled         Reason = "cancelled"
	// ReasonClientHandler: the leg ran out of time while (or after) one of
	// the user's own handlers (Server.Client: elicitation, sampling) ran
	// during it; not the server's slowness.
	ReasonClientHandler Reason = "client_handler"
	// ReasonUnauthorized: HTTP 401 (or a failed OAuth flow after one).
	ReasonUnauthorized Reason = "unauthorized"
	// ReasonForbidden: HTTP 403 (such as insufficient_scope).
	ReasonForbidden Reason = "forbidden"

	// ReasonRetryDeclined: the server ended an SSE stream asking (retry:)
	// for a wait before resuming it longer than the operation had left; the
	// wait was declined at once. Error.RetryAfter holds the requested wait:
	// the server's retry hint, handled like an HTTP Retry-After.
	ReasonRetryDeclined Reason = "retry_declined"
)

// ErrBudgetExhausted matches (errors.Is) an *Error for an operation that
// refused to send because its budget, or the run's deadline, left less than
// Server.MinLeg. The server was not asked; the breaker does not count it.
var ErrBudgetExhausted = errors.New("mcpguard: budget exhausted")

// Error says where an MCP operation stalled or failed: the server, the
// boundary, the limit that fired and the cause. Its message is built only
// from configuration and the closed sets above, never from text the server
// sent, so it is safe to show a model; the cause (which may hold server
// text) is reachable through Unwrap for logs.
//
// The breaker counts it through BreakerOutcome: timeouts at our deadlines,
// transport faults and protocol faults are failures; budget exhaustion and
// cancellation are excluded; refusals are answers (successes).
type Error struct {
	// Server is the server's configured name (its dependency key).
	Server string
	// Operation is what was being done: list_tools (discovery) or call_tool.
	Operation Boundary
	// Boundary is where it ended; connect when the handshake (or a reconnect)
	// failed inside the operation.
	Boundary Boundary
	// Class is the outcome class.
	Class Class
	// Reason is the finer cause.
	Reason Reason
	// Limit is the bound that fired, if any.
	Limit Limit
	// Tool is the tool's name on the server, for call_tool.
	Tool string
	// Granted is the time the last leg was granted (zero when the operation
	// refused to send).
	Granted time.Duration
	// Budget is the operation budget, and Elapsed the time the operation
	// spent before failing.
	Budget, Elapsed time.Duration
	// Attempts is how many times the operation was tried.
	Attempts int
	// RetryAfter is a delay the server asked for (HTTP Retry-After), if any.
	RetryAfter time.Duration
	// Cause is the underlying error (ErrBudgetExhausted for refusals).
	Cause error

	// payload is a bounded excerpt of the raw response of a protocol fault,
	// for logs and RawPayload; never in the message.
	payload string
	// countAuth: Server.CountAuthFailures (ClassAuth counts as a failure).
	countAuth bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mcpguard: server ")
	b.WriteString(quote(e.Server))
	b.WriteString(": ")
	switch e.Class {
	case ClassBudgetExhausted:
		b.WriteString("budget exhausted: ")
		switch e.Limit {
		case LimitRunDeadline:
			b.WriteString("the run's deadline left too little time")
		default:
			fmt.Fprintf(&b, "operation budget %s spent", e.Budget)
		}
		fmt.Fprintf(&b, " before %s could be sent; the server was not asked", e.Boundary)
	case ClassTimeout:
		fmt.Fprintf(&b, "%s timed out (%s, leg granted %s)", e.Boundary, e.Limit, e.Granted.Round(time.Millisecond))
	case ClassCancelled:
		fmt.Fprintf(&b, "%s cancelled by the caller", e.Boundary)
		if e.Limit == LimitRunDeadline {
			b.WriteString(" (run deadline)")
		}
	case ClassRefused:
		fmt.Fprintf(&b, "%s refused by the server (%s)", e.Boundary, e.Reason)
	case ClassProtocol:
		fmt.Fprintf(&b, "%s returned an invalid response (%s)", e.Boundary, e.Reason)
	case ClassAuth:
		fmt.Fprintf(&b, "%s not authorized by the server (%s)", e.Boundary, e.Reason)
	default:
		if d, ok := e.Cause.(*retryDeclined); ok && e.Reason == ReasonRetryDeclined {
			fmt.Fprintf(&b, "%s: the server asked to wait %s before resuming its stream, more than the %s left of the operation (budget %s); declined",
				e.Boundary, d.wait, d.left.Round(time.Millisecond), e.Budget)
			break
		}
		fmt.Fprintf(&b, "%s failed (%s)", e.Boundary, e.Reason)
	}
	if e.Tool != "" {
		b.WriteString("; tool ")
		b.WriteString(quote(e.Tool))
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, "; %d attempts", e.Attempts)
	}
	return b.String()
}

// quote renders a configured or validated name; names are registry keys or
// validated tool names, so this only adds quotes.
func quote(s string) string { return `"` + degrade.SafeName(s) + `"` }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// BreakerOutcome tells the breaker how to count e (registry.OutcomeReporter).
// An authorization failure (ClassAuth) is excluded: the server answered,
// and its outage is not what failed (Server.CountAuthFailures makes it a
// failure).
func (e *Error) BreakerOutcome() registry.Outcome {
	switch e.Class {
	case ClassFault, ClassTimeout, ClassProtocol:
		return registry.Failure
	case ClassAuth:
		if e.countAuth {
			return registry.Failure
		}
		return registry.Excluded
	case ClassRefused, ClassOK:
		return registry.Success
	default:
		return registry.Excluded
	}
}

// RawPayload returns a bounded excerpt (at most 512 bytes, control
// characters dropped) of the raw response behind a protocol fault, for
// debugging and logs; empty for other errors. It is server text: never show
// it to a model. Error does not include it, so the message ADK hands the
// model stays free of it.
func (e *Error) RawPayload() string { return e.payload }

// RetryAfterHint returns the delay the server asked for (registry.RetryHinter).
func (e *Error) RetryAfterHint() time.Duration { return e.RetryAfter }

// DegradeReason maps e onto the closed reason set of degraded payloads.
func (e *Error) DegradeReason() degrade.Reason {
	switch e.Class {
	case ClassTimeout:
		return degrade.ReasonTimeout
	case ClassProtocol:
		return degrade.ReasonMalformedResponse
	case ClassBudgetExhausted:
		return degrade.ReasonBudgetExhausted
	case ClassUnavailable:
		return degrade.ReasonCircuitOpen
	}
	if e.Boundary == BoundaryConnect || e.Class == ClassAuth {
		return degrade.ReasonConnectFailed
	}
	if e.RetryAfter > 0 {
		return degrade.ReasonRateLimited
	}
	return degrade.ReasonServerError
}

// retryable reports whether a failed attempt may be repeated at all (the
// caller still decides whether the operation is safe to repeat).
func (e *Error) retryable() bool {
	switch e.Class {
	case ClassFault, ClassTimeout:
		return true
	case ClassProtocol:
		return e.Reason == ReasonTruncated
	}
	return false
}

// callerBound reports whether e ended for reasons of the operation that got
// it rather than of the server: its caller cancelled, or its own budget or
// run deadline ran out (refused to send, or bounded the leg that timed out).
// Such a result of work shared with other operations (a discovery or a dial
// they joined) says nothing about what they can get within their own
// budgets, so they try for themselves instead of taking it.
func (e *Error) callerBound() bool {
	switch e.Class {
	case ClassCancelled, ClassBudgetExhausted:
		return true
	}
	return e.Limit == LimitOperationBudget || e.Limit == LimitRunDeadline
}

// brokeConnection reports whether e means the session cannot be used again.
func (e *Error) brokeConnection() bool {
	switch e.Reason {
	case ReasonConnectionClosed, ReasonSessionMissing, ReasonTruncated, ReasonTransport,
		// Nothing listens at the server's address: the process that held
		// the session is gone. A session kept through it would be sent,
		// once a new process listens, as a session it does not know.
		ReasonConnectionRefused:
		return true
	}
	return false
}

// UnavailableError is returned when the server's breaker refused an
// operation: the server was not contacted. It matches registry.ErrOpen
// through errors.Is, and the breaker does not count it.
type UnavailableError struct {
	Server     string
	State      registry.State
	Refusal    registry.Refusal
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string {
	if e.RetryAfter == registry.UntilReset {
		return fmt.Sprintf("mcpguard: server %s unavailable (%s, breaker %s) until an operator resets it",
			quote(e.Server), e.Refusal, e.State)
	}
	return fmt.Sprintf("mcpguard: server %s unavailable (%s, breaker %s); retry after %s",
		quote(e.Server), e.Refusal, e.State, e.RetryAfter.Round(time.Second))
}

// Is makes errors.Is(err, registry.ErrOpen) true.
func (e *UnavailableError) Is(target error) bool { return target == registry.ErrOpen }

// BreakerOutcome is Excluded: the breaker's own refusal is not an outcome.
func (e *UnavailableError) BreakerOutcome() registry.Outcome { return registry.Excluded }
