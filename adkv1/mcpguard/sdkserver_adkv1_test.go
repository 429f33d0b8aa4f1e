package mcpguard_test

import "github.com/modelcontextprotocol/go-sdk/mcp"

// legacyServerOptions are the options of a go-sdk server that keeps HTTP
// sessions: on go-sdk v1.4.1 every server does.
func legacyServerOptions() *mcp.ServerOptions { return &mcp.ServerOptions{} }
