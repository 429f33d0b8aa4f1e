// Package callbacks holds adkbreaker's ADK callbacks: the tool path (a
// circuit breaker per dependency around every tool call), failure
// classification, per-invocation short-circuit accounting and escalation,
// and model-request annotation.
//
// Most users register the assembled plugin (package plugin). The same
// callbacks work on one agent through llmagent.Config:
//
//	h, _ := callbacks.New(callbacks.Config{Registry: reg, Mappings: maps})
//	a, _ := llmagent.New(llmagent.Config{
//		…,
//		BeforeToolCallbacks:  []llmagent.BeforeToolCallback{h.BeforeTool},
//		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{h.OnToolError},
//		AfterToolCallbacks:   []llmagent.AfterToolCallback{h.AfterTool},
//		BeforeModelCallbacks: []llmagent.BeforeModelCallback{h.BeforeModel},
//	})
//
// Agent-level callbacks have no AfterRun, so per-invocation state is then
// freed by the ledger's sweeper and caps rather than at the end of each run;
// prefer the plugin when you can.
//
// # The tool path under ADK's ordering rules
//
//   - BeforeTool resolves the tool's dependency (explicit Mapping, then a
//     DependencyKey() method, then the tool's own name) and asks its breaker.
//     Refused: it returns the unavailable payload from package degrade — a
//     result, never an error, because an error would run every OnToolError
//     callback with the breaker's own refusal. Admitted: it records the call
//     under (invocation ID, function call ID).
//   - OnToolError receives the raw error first (the plugin must be registered
//     first) and reports the classified outcome. It returns (nil, nil).
//   - AfterTool runs even after a short-circuit; a call with no record is the
//     plugin's own short-circuit, or a name the model invented, and is
//     ignored. Otherwise it reports the outcome. It returns (nil, nil).
//   - AfterRun abandons calls that never reported (as Excluded, freeing
//     half-open probe slots) and frees the invocation's accounting.
//   - BeforeModel ends the turn with a final answer once the invocation's
//     short-circuit budget or turn budget (MaxModelCalls, MaxTurnDuration,
//     MaxTurnTokens) is
//     spent or a failover model has no endpoint left, and marks (or removes)
//     declarations of tools whose dependency is open. AfterTool escalates the
//     tool call after which the turn budget is spent, so that a LoopAgent
//     stops; BeforeRun starts the budget's clock. OnEvent (the runner's
//     on-event callback) escalates the final answer with which the handler
//     ended a turn, so that a LoopAgent whose worker gave no tool call to
//     escalate on exits on that answer instead of spinning.
//     BeforeModel also replaces each protected function tool of the request
//     by a GuardedTool (Config.NoAutoGuard turns that off). The tools ADK v2
//     installs itself for task-mode and single_turn sub-agents, and
//     finish_task, are no dependencies unless a mapping names them: their
//     sub-agents run in the same invocation, under the same callbacks.
//     A GuardedTool runs with the turn's deadline (MaxTurnDuration) in its
//     context: a call the deadline cuts is excluded and answered with
//     degrade.TurnDeadlineNote, and the turn ends.
//
// # Only a real execution counts
//
// An agent's own before-tool callbacks run after the handler admitted a
// call, and may refuse it (a permission check) or answer it (a cache); a
// plugin registered ahead (ADK's retryandreflect) may turn tool errors into
// results. A GuardedTool's Run marks that the tool really ran and reports
// the tool's own outcome before any callback sees it, so: a call that never
// ran counts neither way; a tool error shown to AfterTool as a success is
// still a failure (and is logged once and counted through a
// MismatchObserver); Policy.CallTimeout bounds the call. Calls no guard
// marked count as before while the breaker is closed, and release a
// half-open probe without deciding. Handler.Guard guards tools explicitly,
// for agents whose callbacks do not include BeforeModel.
//
// # Sub-agents behind agent tools
//
// ADK's agent tool runs its sub-agent on a runner of its own, without
// plugins. BeforeModel replaces each ADK agent tool of the request by an
// AgentTool (Config.NoAgentToolGuard turns that off), which runs the same
// sub-agent the same way on a runner with the handler's plugin, in a sub-run
// whose short-circuits, escalation and turn budget count in the root
// invocation; when a dependency was refused in the sub-run, the agent tool
// answers its caller with that dependency's unavailable payload.
// Handler.AgentTool builds one where the plugin cannot (an agent tool
// hidden from it, an agent that does not run the handler's BeforeModel).
//
// # Tokens
//
// With Config.MaxTurnTokens, or an Observer that is a CostObserver,
// AfterModel adds the usage metadata of every complete model response to
// its root turn (sub-runs behind agent tools count in their root's), with
// what a failover model wrote in the response's metadata (a failover, a
// stall, no endpoint left); OnModelError marks a call that ended in a stall
// after its first chunk (observe.ErrModelStall). BeforeModel ends the turn at the next model call
// once the budget is spent (TurnEndTokenBudget); the root run's AfterRun
// reports the turn's cost (TurnCostEvent) and frees it with the rest.
//
// # Repeated calls
//
// AfterModel counts every call the model lists by (root turn, branch,
// tool, canonical arguments), and BeforeTool answers the repeats the
// breaker admits: the Config.RepeatLimit-th identical call (default 3) is
// answered with degrade.RepeatNote instead of running, the next one
// escalates and the following model call is answered with a final answer
// (TurnEndRepeatedCall). A call the breaker refuses is answered by the
// breaker (the unavailable payload), and a call the breaker counts as a
// failure does not count toward the limit: retries of failing calls are
// the breaker's to stop (docs/design.md, "One answer per call"). The
// counts live in a bounded map per root turn, released by its AfterRun.
// NoRepeatLimit opts a tool out (Config.ToolRepeatLimits) or a dependency
// (Dependency.RepeatLimit).
//
// # Classification
//
// Classify decides what counts against a dependency: transport errors,
// timeouts at a deadline we set, HTTP 5xx and 429 (StatusError or any error
// with StatusCode()), and genai.APIError 429/5xx are failures. Caller
// cancellation, tool.ErrConfirmationRequired/Rejected, argument validation,
// other 4xx and ErrNoResult are excluded. Errors may decide for themselves
// by implementing registry.OutcomeReporter; Dependency.Classify overrides
// per dependency.
//
// Names the model invents reach only OnToolError (ADK never calls
// BeforeTool for them), so they never create a breaker.
package callbacks
