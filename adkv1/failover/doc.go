// Package failover puts a breaker around each model endpoint and fails over
// to the next endpoint of a chain, so that an open breaker means "use the
// fallback model", not "no agent".
//
// A Model is an ADK model.LLM (give it to llmagent.Config.Model) around an
// ordered chain of endpoints, say Gemini 2.5 Pro on one region and Gemini
// 2.5 Flash on another. Each endpoint has its own breaker in a shared
// registry.Registry, keyed by model name plus backend and location or base
// URL, so the adkbreaker plugin, snapshots and telemetry see them, and an
// outage in one region does not trip another:
//
//	reg, _ := registry.New(failover.PolicyOptions(proKey, flashKey)...)
//	m, _ := failover.New("assistant", reg, []failover.Endpoint{
//		{LLM: pro, Key: proKey, Timeout: 60 * time.Second},
//		{LLM: flash, Key: flashKey},
//	})
//	agent, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: m, …})
//	p, _ := breaker.New(breaker.WithRegistry(reg), breaker.WithModelGuard(m))
//
// or, from a configuration file, FromConfig with RegistryOptions.
//
// # When it fails over
//
// Endpoints are tried in order. An endpoint is skipped while its breaker
// refuses calls (open, or half-open with its probe in flight) or while it
// is held after a server's retry hint. A called endpoint that fails before
// yielding anything with an error that another endpoint may not repeat —
// 5xx, 429, a transport error, its Timeout — is left for the next one. A
// 400, 404 or other 4xx, a safety block and the caller's cancellation are
// not failed over: another endpoint would answer the same, and they are not
// the endpoint's fault (see Classify). Once a response has been yielded the
// call stays on that endpoint: a stream that fails after its first chunk
// reports the error as it is, never switching models silently mid-answer.
//
// # Stalls
//
// An endpoint that accepts a call and then produces no content is a stall:
// no content part (a thought part counts; headers, SSE keep-alives and
// content-less chunks do not) within Endpoint.FirstOutputTimeout of the
// call's start, or within Endpoint.IdleTimeout of the last part (defaults
// DefaultFirstOutputTimeout and DefaultIdleTimeout; negative: off). A
// stall is a failure of the endpoint (reason stall). Before the first chunk
// the call fails over; after it, the call ends with a *StallError saying how
// much was streamed, never a silently truncated answer.
//
// Each call gets its own copy of the request with Model set to the
// endpoint's model name (ADK's request names the chain; model/gemini sends
// LLMRequest.Model, and mutates the request it is given).
//
// # Outcomes
//
// Every admitted call reports exactly one outcome to its breaker, on every
// path: an answer, an error, a consumer that stops early, a panic. Pending
// counts outcomes still owed; it is zero whenever no call is in progress.
// A failure's server retry hint (Gemini's RetryInfo.retryDelay, or the
// Retry-After header seen by RetryAfterTransport) fails that call over at
// once. Under DefaultPolicy (TripOnRetryHint false, as by default) it does
// not open the endpoint's breaker by itself — one 429 would demote every
// user — but it is a floor for the open hold. A 429 is a refusal, not a failure of the
// breaker's thresholds: RetryHintFailures (5) refusals in a row open the
// breaker for the hint (at least OpenFor), so an endpoint answering 429 to
// every call is open on its fifth and skipped until the hint has passed,
// while under a partial storm the streak must be unlikely for the share of
// calls the endpoint has been refusing (ExhaustionFalseOpen), so a storm
// refusing a third or half of the calls does not open it. A 429 for a
// per-day quota holds the endpoint until the quota resets (capped by the
// policy's MaxRetryHint) and fails over at once.
//
// # Adaptive throttling
//
// Endpoint.Throttle (opt-in) sends a share of an endpoint's calls straight
// to the next endpoint while the endpoint refuses calls for its rate and
// shedding costs it no accepted calls (a capacity limit; after Google SRE's
// client-side throttling): those calls no longer pay a 429 round trip, a
// storm that refuses a share whatever the load is left to per-call
// failover, and the breaker stays for outages. Shed calls are never
// failures. See Throttle.
//
// # All endpoints unavailable
//
// Model implements callbacks.ModelGuard: with plugin.WithModelGuard(m), the
// plugin's BeforeModel ends the turn with a final model response the user
// can read ("The assistant is temporarily unavailable. Please try again in
// about 30 seconds.") instead of failing it. What the plugin cannot see — the
// first turn of an outage, when every endpoint is still closed and fails in
// turn, and agents used as tools, which run no plugins — GenerateContent
// answers the same way by default; with WithErrorWhenUnavailable it yields
// an *Error instead.
//
// # Loud failover
//
// Every hop logs one structured line (from, to, reason, retry_after),
// rate-limited per (from, to, reason); the answering endpoint and the
// failover are written into the response's CustomMetadata and onto ADK's
// generate_content span, which is current inside GenerateContent (AttrEndpoint,
// AttrFailoverFrom, AttrFailoverReason, EventFailover); WithOnFailover
// feeds metrics. LogTransitions logs the breakers' state changes, which the
// registry delivers in order.
//
// # Defaults
//
// Model endpoints want a conservative breaker: one that trips easily
// silently demotes every user to a weaker model. DefaultPolicy explains the
// numbers; New warns when an endpoint falls back to a registry default that
// trips more easily.
//
// # ADK notes
//
// ADK uses the model's Name() for the generate_content span, for
// LLMRequest.Model in callbacks, and for model-family heuristics (the
// output-schema processor for Gemini 2.5 on the Gemini API looks for a
// "gemini-" name). Name the chain after its primary model if you rely on
// those. GetGoogleLLMVariant answers for the first endpoint that would be
// tried now.
package failover
