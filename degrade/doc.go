// Package degrade is what a model reads when a dependency is unavailable
// because its circuit breaker is open, and the per-invocation accounting of
// those short-circuits.
//
// When a tool's backend is short-circuited, the tool call is answered with a
// payload built by a Builder instead of an error. The model reads it, learns
// that retrying now will not help and when it might, and re-plans: it uses
// other tools, answers without the tool, or tells the user what could not be
// done. After Limit short-circuits of the same dependency in one invocation,
// counted by a Ledger, the guidance turns terminal ("Do not call the tool
// again in this turn"), and when the invocation's budget is spent the caller
// ends the turn with FinalMessage.
//
// # Payload
//
// Build returns a map[string]any whose JSON encoding looks like this (keys
// sorted as encoding/json writes them):
//
//	{
//	  "dependency": "search-api",
//	  "guidance": "web_search is unavailable: search-api keeps failing, so calls to it are paused. Retrying now will not help; see retry. Use other tools or answer without it; tell the user what is missing.",
//	  "reason": "circuit_open",
//	  "retry": {"advised": false, "after_seconds": 27},
//	  "schema": "adkbreaker.unavailable/v1",
//	  "short_circuits": {"limit": 2, "this_turn": 1},
//	  "status": "unavailable",
//	  "tool": "web_search"
//	}
//
// The key set is fixed (KeyStatus … KeyGuidance), plus KeyAlternatives and
// KeyLastGood when configured. Schema versions the shape, so Parse, tests
// and the model itself can check it. reason comes from a closed set (see
// Reasons); retry.after_seconds is whole seconds in [1, MaxRetryAfterSeconds]
// from the breaker's own record, absent for ReasonIsolated (isolated until an
// operator resets it: no time would be true, see UntilReset); guidance is rendered from templates embedded
// in the binary, at most MaxGuidanceBytes, and never contains numbers, so
// it does not vary per call. A payload's JSON encoding is at most
// MaxPayloadBytes.
//
// # No upstream text
//
// Nothing from an upstream error ever reaches a payload or a message: no
// error strings, status lines, stack traces, URLs, hosts, headers, tokens or
// echoed arguments, which may carry secrets or prompt injections. The API
// makes this structural: no function of this package takes an error or
// free-form text other than configured names, and every name passes through
// SafeName, which removes control, bidi, zero-width and tag characters and
// bounds the length. testdata/secrets.txt is a corpus of seeded secrets and
// injection strings that tests in this and other packages check never
// appear in model-visible output.
//
// # Cost
//
// A short-circuit replaces the dependency call, so its payload is the whole
// cost of the call. The payload is JSON-shaped — strings, bools, float64
// numbers, map[string]any objects and []any lists, exactly what
// encoding/json decodes — so that callbacks read it the same way in process
// and after a session store's round trip. A Go map with at most eight
// entries is a header and one group: two allocations. NewBuilder therefore
// renders and boxes every value in advance (names, guidance for each Reason
// in both variants, counts up to 64), and the package shares boxed
// after_seconds values, so Build without extras makes the two allocations of
// each of its three maps (the payload, retry and short_circuits), six in
// all. The nested maps are new for every payload: shared maps would let one
// caller's mutation leak into every other user's payloads. A ninth top-level
// key doubles the payload map's allocations, which is why the base key set
// has eight keys and the optional keys appear only when configured.
// Ledger.Hit allocates only for a new invocation or dependency.
//
// Package degrade imports only the standard library.
package degrade
