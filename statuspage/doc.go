// Package statuspage serves what an operator looks at when an agent's
// dependencies misbehave: a live, self-contained HTML page, a versioned JSON
// document of the same facts, a health endpoint and, when enabled, operator
// actions.
//
// A Handler reads a *registry.Registry (the one the plugin uses; see
// breaker.Handler.Registry) and is an http.Handler, mountable on any mux
// under any prefix:
//
//	page, err := statuspage.New(reg)
//	if err != nil { ... }
//	defer page.Close()
//	mux.Handle("/adkbreaker/", http.StripPrefix("/adkbreaker", page))
//
// Routes, relative to where it is mounted:
//
//	GET  /              the HTML page (no external assets; works offline),
//	                    updated live over Server-Sent Events
//	GET  /status.json   the status document (schema "adkbreaker.status/v1")
//	GET  /events        Server-Sent Events: an "status" event with the same
//	                    document on every transition and every refresh period,
//	                    rendered once and shared by every open stream
//	GET  /healthz       application/health+json; an open breaker is reported
//	                    as "warn" (degraded), never as a failure, and the
//	                    status code is always 200: a breaker wired into a
//	                    readiness probe must not take the agent out of service
//	POST /actions/isolate, /actions/reset
//	                    operator actions, only with WithActions: they require
//	                    "Authorization: Bearer <token>", compared in constant
//	                    time; every attempt is logged and counted
//
// A replica that shares its breakers through Redis (package fleet) shows
// its fleet state and counters on the page with WithFleet(f.Status); a
// failover model shows its endpoints' adaptive throttles with
// WithThrottles(m.ThrottleOf); WithTools names the tools behind each
// dependency; WithTurnCosts shows the tokens spent on turns that met an
// unavailable dependency in the last hour, from a TurnCosts the plugin
// fills (breaker.WithCostObserver). Those options take funcs of plain types, so this package
// depends on neither.
//
// For an incident the page shows an isolated dependency apart from an open
// one, the window that tripped a breaker (its own counts start again at
// zero), what trips it, the last refusals, and ten minutes of rates per
// dependency — calls/s, failure %, p99 latency, short-circuits/s and
// bulkhead rejections/s — computed from the registry's own counters, which
// the Handler samples about once a second into fixed-size rings (see
// Rates). For the p99 it switches on the registry's latency sampling
// (registry.Breaker.SampleLatency), and off again at Close.
//
// The page renders every name with textContent, never as markup, so a
// hostile dependency name shows as text, and its Content-Security-Policy
// admits only its own script and style sheet, by a nonce drawn for each
// response: an injected inline script does not run. Operator actions are
// confirmed in the page and act only on dependencies that already exist: a
// request can never create a breaker.
package statuspage
