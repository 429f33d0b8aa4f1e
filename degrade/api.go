package degrade

// This file is the package's API contract: constants, keys, the Reason set
// and the value types of a payload. Implementation lives in the other files
// of the package.

// Payload schema identifiers.
const (
	// Schema is the value of the "schema" field of every payload.
	Schema = "adkbreaker.unavailable/v1"
	// StatusUnavailable is the value of the "status" field.
	StatusUnavailable = "unavailable"
	// MaxPayloadBytes bounds the JSON encoding of any payload Build returns.
	MaxPayloadBytes = 1024
	// MaxRetryAfterSeconds caps Retry.AfterSeconds (retry.after_seconds).
	MaxRetryAfterSeconds = 3600
)

// Top-level payload keys. Every payload has the eight base keys and no
// more, so that a plain payload map is two allocations (a ninth key doubles
// that; see docs/benchmarks.md). The two optional keys appear only when
// configured for the dependency.
const (
	// KeyStatus holds StatusUnavailable.
	KeyStatus = "status"
	// KeySchema holds Schema.
	KeySchema = "schema"
	// KeyDependency holds the dependency's configured name, after SafeName.
	KeyDependency = "dependency"
	// KeyTool holds the tool's name, after SafeName.
	KeyTool = "tool"
	// KeyReason holds a Reason, as a string.
	KeyReason = "reason"
	// KeyRetry holds the object {"advised": false, "after_seconds": n} as a
	// map[string]any (the fields of Retry).
	KeyRetry = "retry"
	// KeyShortCircuits holds the object {"this_turn": n, "limit": k} as a
	// map[string]any (the fields of ShortCircuits).
	KeyShortCircuits = "short_circuits"
	// KeyGuidance holds what the model should do, as a string of at most
	// MaxGuidanceBytes from the embedded templates.
	KeyGuidance = "guidance"

	// KeyAlternatives, optional, holds a []any of tool names (strings) the
	// model may use instead (Extras.Alternatives).
	KeyAlternatives = "alternatives"
	// KeyLastGood, optional, holds the object {"result": {...},
	// "age_seconds": n} as a map[string]any (the fields of LastGood).
	KeyLastGood = "last_good"
)

// Keys of the nested objects. Numbers in a payload are float64, as
// encoding/json decodes them.
const (
	keyAdvised      = "advised"
	keyAfterSeconds = "after_seconds"
	keyThisTurn     = "this_turn"
	keyLimit        = "limit"
	keyResult       = "result"
	keyAgeSeconds   = "age_seconds"
)

// Reason is why a dependency is unavailable. The set is closed: Valid
// reports membership and Reasons lists it. It is a category chosen by the
// caller, never text taken from an upstream error.
type Reason string

// The Reason set. The first three are about the breaker (calls are being
// withheld), the next five about how the dependency has been failing, then
// one about the invocation's own budget, and the last about the dependency's
// bulkhead (calls are withheld too); guidance is worded per family.
const (
	// ReasonCircuitOpen: the breaker is open after repeated failures.
	ReasonCircuitOpen Reason = "circuit_open"
	// ReasonHalfOpenBusy: the breaker is half-open and its probe slots are
	// taken by other calls.
	ReasonHalfOpenBusy Reason = "half_open_busy"
	// ReasonIsolated: an operator has forced the breaker open.
	ReasonIsolated Reason = "isolated"
	// ReasonTimeout: recent calls timed out.
	ReasonTimeout Reason = "timeout"
	// ReasonRateLimited: the dependency is rejecting calls for rate limits.
	ReasonRateLimited Reason = "rate_limited"
	// ReasonServerError: the dependency is returning server errors.
	ReasonServerError Reason = "server_error"
	// ReasonConnectFailed: the dependency cannot be reached.
	ReasonConnectFailed Reason = "connect_failed"
	// ReasonMalformedResponse: the dependency's responses cannot be used.
	ReasonMalformedResponse Reason = "malformed_response"
	// ReasonBudgetExhausted: this invocation's short-circuit budget is spent.
	ReasonBudgetExhausted Reason = "budget_exhausted"
	// ReasonSaturated: the dependency's bulkhead is full — as many calls as
	// it may have at once are already in flight. Not a failure of the
	// dependency; the breaker stays closed.
	ReasonSaturated Reason = "saturated"
)

// Retry is the shape of the object under KeyRetry. Build stores it as a
// map[string]any (JSON-shaped, numbers as float64); decode a payload into
// this struct with encoding/json, or read it with Parse.
type Retry struct {
	// Advised is always false in an unavailable payload: do not retry now.
	Advised bool `json:"advised"`
	// AfterSeconds is when the dependency may next be tried, from the
	// breaker's own record, in whole seconds rounded up, in [1, MaxRetryAfterSeconds].
	// It is absent (0) for an isolated dependency: it stays unavailable until
	// an operator restores it, and no time would be true.
	AfterSeconds int `json:"after_seconds,omitempty"`
}

// ShortCircuits is the shape of the object under KeyShortCircuits. Build
// stores it as a map[string]any, like Retry.
type ShortCircuits struct {
	// ThisTurn counts short-circuits of this dependency in this invocation,
	// including this one.
	ThisTurn int `json:"this_turn"`
	// Limit is the count at which guidance becomes terminal.
	Limit int `json:"limit"`
}

// LastGood is a cached earlier result, given to Build. Build stores it under
// KeyLastGood as a map[string]any with the same JSON field names.
type LastGood struct {
	// Result is the earlier successful result of the tool.
	Result map[string]any `json:"result"`
	// AgeSeconds is how old Result is, in whole seconds.
	AgeSeconds int `json:"age_seconds"`
}

// Extras are optional per-dependency additions to the payload. The zero
// Extras adds nothing.
type Extras struct {
	// Alternatives are configured tool names the model may use instead.
	Alternatives []string
}
