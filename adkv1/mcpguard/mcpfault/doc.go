// Package mcpfault is an MCP server (the go-sdk's own) that misbehaves on
// purpose, for testing how an agent degrades: your tests and ours.
//
// A Server offers a few tools (DefaultTools, plus Filler tools for long,
// paginated lists) and misbehaves according to its Mode, which can change
// at any time (SetMode):
//
//	NONE              healthy
//	UNREACHABLE       connecting is refused
//	BLACKHOLE         the connection is accepted, nothing is ever answered
//	SLOW_LIST         every tools/list page takes Config.Delay
//	SLOW_CALL         every tools/call takes Config.Delay
//	FLAPPING          tools/call fails (connection dropped, or HTTP 503 or
//	                  Config.FlapStatus, such as 429) for
//	                  the first RecoverAfter calls, or alternately every
//	                  FlapEvery calls; the tool does not run
//	MALFORMED         a tools/call result has the wrong shape
//	TRUNCATED         the tool runs, its response is cut off mid-message
//	OVERSIZED         tools return Config.OversizeBytes of text
//	SCHEMA_VIOLATION  structured output violates the declared output schema
//	DROPPED           the tool runs, the connection closes before the response
//
// It speaks both MCP protocols: by default the newest its go-sdk serves
// (with go-sdk ≥ v1.7.0 the sessionless protocol, and HTTP served
// statelessly); with Config.Legacy it is a server from before protocol
// 2026-07-28, which refuses server/discover as unknown (so a current client
// falls back to initialize) and keeps HTTP sessions. Run fault tests against
// both. Faults (Latency, Blackhole, the modes) hit whichever handshake
// request the client sends; the Latency key Handshake delays each of them,
// and Handshakes counts the handshakes accepted on either protocol.
//
// It serves in-process, with no sockets (Dial, or Transport for clients that
// reconnect through one transport value), and over streamable HTTP on
// 127.0.0.1 (StartHTTP, HTTPDial). Executions counts, per tool, how many
// times the tool really ran on the server, which is how tests prove that a
// call was sent at most once; Requests counts requests by method;
// OpenConnections shows whether a client left connections behind.
//
//	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Truncated})
//	defer fs.Close()
//	srv := mcpguard.Server{Name: "payments", Dial: fs.Dial}
//
// Timers (Delay, Latency) use the time package, so tests can run inside
// testing/synctest with the in-process transport and assert exact virtual
// durations. The HTTP transport uses real sockets: use it outside synctest.
package mcpfault
