// Package mcpguard puts MCP servers behind a declared policy, so that an
// unreliable server costs a bounded pause and one missing capability, never
// the agent.
//
// Each server is a Server: its name (the dependency key of its breaker and
// of all its tools), required or optional, a connect timeout (the
// handshake), a discovery timeout (all tools/list pages), a call timeout,
// one operation budget, retry settings, a tool allowlist and the operator's
// allowlist of tools that are safe to repeat. A Guard turns a set of servers
// into one ADK tool.Toolset:
//
//	reg := registry.MustNew(mcpguard.RegistryOptions(servers...)...)
//	g, err := mcpguard.New(reg, servers)
//	defer g.Close()
//	if err := g.Start(ctx); err != nil { // a required server is unreachable
//		return err
//	}
//	a, _ := llmagent.New(llmagent.Config{..., Toolsets: []tool.Toolset{g.Toolset()}})
//	p, _ := breaker.New(breaker.WithRegistry(reg)) // the same registry
//	r, _ := runner.New(runner.Config{..., PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
//
// # One deadline per operation
//
// A discovery and a tool call are operations. Each has one budget
// (Server.OperationBudget), narrowed by the caller's own deadline, that
// every leg spends: the handshake, every list page, a reconnect, every
// retry and every backoff. A leg is granted what is left, capped by its own
// timeout; it is never granted zero or unbounded time: with less than
// Server.MinLeg left the operation refuses to send and returns an *Error
// matching ErrBudgetExhausted, which names the budget and the server and
// which the breaker does not count.
//
// # Both MCP protocols
//
// go-sdk v1.7.0 and later connect with the sessionless protocol (2026-07-28:
// one server/discover, no initialize, no HTTP session) and fall back to the
// legacy handshake for older servers; earlier go-sdk versions speak only the
// legacy one. The guard works the same on both: the connect leg
// (Server.ConnectTimeout) is one deadline for every request of the
// handshake, whichever path it takes (discover, the fallback initialize and
// initialized, the go-sdk's subscriptions/listen), and no goroutine
// outlives Close or a lost connection. On the sessionless protocol there is
// no session to lose: "session missing" cannot happen, and a server restart
// costs nothing; the guard's connection is what it keeps, drops after a
// fault and re-dials. See docs/mcp.md.
//
// # Retries only where safe
//
// The handshake and the tool list are retried. A tools/call that may have
// reached the server is retried only for tools in Server.IdempotentTools
// (or, for a Trusted server, tools it annotates idempotentHint), or when it
// carries an idempotency key in its _meta (WithIdempotencyKeys; the same
// key on every attempt): any other call is sent at most once by this layer.
// A session the server lost (HTTP 404, legacy servers) is re-established
// once per operation without spending the retry budget. Refusals, argument-validation
// failures and isError results are answers: never retried, counted as
// successes. Backoff is full jitter from an injectable source (WithRand),
// bounded by the remaining budget, and a per-server retry budget caps
// retries to a fraction of operations. A delay the server asks for
// (Retry-After, through HTTPClient) is waited out exactly, or the retry is
// not made; likewise an SSE retry: that does not fit what is left of the
// operation is declined at once (ReasonRetryDeclined). Either delay is the
// server's retry hint for its breaker (Error.RetryAfterHint): the failed
// call counts as one ordinary failure, and the hint is a floor for the hold
// once the breaker opens; RetryHintFailures (3) such failures in a row open
// it for the hint (registry.Policy.TripOnRetryHint true opens it on the
// first).
//
// # Optional and required servers
//
// A required server that cannot be reached fails Start with an *Error. After
// Start, while its last good tool list exists it is served like an
// optional one (unless NoLastGood); without one it fails the turn (the
// toolset's Tools) with an *Error, or an *UnavailableError while its
// breaker is open. An optional one is left out of the tool list (or served
// from its last good list, fresh or not, while it is down or its breaker
// open; Guard.Degraded lists them), and the toolset
// tells the model, once per
// request and as data, which capability is missing
// (degrade.CapabilityNotice, appended to the system instruction), or, when
// its last good list is offered, that its calls may be unavailable
// (degrade.DegradedCapabilityNotice). A server
// that fails in the middle of a run degrades that call, not the tool list.
//
// # Breakers
//
// Tools report their server's name from DependencyKey, so the adkbreaker
// plugin admits and counts every call of a server on one breaker; discovery
// admits and reports on the same breaker. A call the plugin did not admit
// (no plugin on the runner) is admitted by the tool itself, so an open
// breaker keeps calls from the server either way, and no call is counted
// twice (registry.Admission). Errors implement
// registry.OutcomeReporter: timeouts at our deadlines, transport faults and
// protocol faults are failures; budget exhaustion and cancellation are
// excluded; refusals are successes; authorization failures (ClassAuth:
// HTTP 401/403, a failed OAuth flow) are excluded and never retried
// (Server.CountAuthFailures counts them).
//
// # The go-sdk's own behaviour
//
// The go-sdk's streamable HTTP connection is handed to the go-sdk
// unwrapped (it carries hooks a wrapper cannot forward: the
// MCP-Protocol-Version header, the standalone SSE stream, tools/list_changed
// and server requests on it) and is guarded at its HTTP requests; other
// connections are wrapped. Server.Client gives the guard's client the
// handlers a server may need (elicitation, sampling, logging, progress),
// and Server.Roots its roots; they survive reconnection. A refused
// connection drops the session, and a server answering an unknown session
// with 400 (not 404) has it renewed, so that the first operation after a
// restart starts a new session. A stdio server is a Dial returning an
// mcp.CommandTransport: a new process per connection.
//
// # Answers that are not answers
//
// A result is held to the tool's declared output schema, and to
// Server.MaxResultBytes, before it reaches the model; a violation, a
// truncated or a malformed response is a protocol fault whose raw payload
// goes to the log only, bounded. An isError result reaches the model as a
// fixed category (StatusToolError), never as the server's text, unless
// Server.ToolErrorDetail asks for a sanitised, bounded excerpt.
//
// # Health and logs
//
// Guard.Health reports each server's breaker state, last outcome class,
// operation, consecutive failures, retries and latency. Each failed
// operation writes one structured log line (server, operation, boundary,
// limit, class, reason); successes write nothing.
//
// # Telemetry
//
// Every reach for a server is an OpenTelemetry span "mcp.<server>.<operation>"
// (list_tools, call_tool) carrying adk.mcp.server, adk.mcp.operation and
// adk.mcp.breaker, the outcome class, attempts, the last leg's granted time
// and the budget; a tool call's span is a child of ADK's execute_tool span,
// each handshake is a child span "mcp.<server>.connect", and each retry an
// adk.mcp.retry event. Outcomes, retries and leg latency are counted by
// server, operation and class (adkbreaker.mcp.operations,
// adkbreaker.mcp.retries, adkbreaker.mcp.leg.duration). Both use the global
// providers unless WithTracerProvider and WithMeterProvider say otherwise.
// Text a server sent reaches a span only through redact.Text.
//
// # Configuration file
//
// FromConfig builds a Guard from the mcp_servers section of a configuration
// file (package config), reading header values (credentials) from the
// environment variables the file names.
//
// See docs/mcp.md for the policy table and a worked example of the budget,
// and package mcpfault for a fault-injecting MCP server to test with.
package mcpguard
