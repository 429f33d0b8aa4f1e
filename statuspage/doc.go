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
//	                    document on every transition and every refresh period
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
// its fleet state and counters on the page with WithFleet(f.Status).
//
// The page renders every name with textContent, never as markup, so a
// hostile dependency name shows as text. Operator actions act only on
// dependencies that already exist: a request can never create a breaker.
package statuspage
