//go:build ignore

package mcpguard_test

import "github.com/modelcontextprotocol/go-sdk/mcp"

// legacyServerOptions are the options of a go-sdk server pinned to the
// legacy protocol versions: it answers server/discover with HTTP 400 and
// JSON-RPC -32022 (renegotiate), the client falls back to initialize, and
// the server keeps HTTP sessions.
func legacyServerOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18"}}
}
