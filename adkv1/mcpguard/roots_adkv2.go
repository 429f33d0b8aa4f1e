//go:build ignore

//lint:file-ignore SA1019 MCP deprecates roots and sampling as of protocol version 2026-07-28 (SEP-2577); servers on older versions still use them, and the go-sdk keeps them through the deprecation window.

package mcpguard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Root is a root the client offers the server (roots/list; Server.Roots).
// MCP deprecates roots as of protocol version 2026-07-28 (SEP-2577);
// servers on older versions still ask for them.
type Root = mcp.Root

func addRoots(c *mcp.Client, roots []*Root) { c.AddRoots(roots...) }

// timeSampling times the user's sampling handler like the elicitation
// handler (see handlerClock): enter marks the time spent in it. MCP
// deprecates sampling as of protocol version 2026-07-28 (SEP-2577).
func timeSampling(o *mcp.ClientOptions, enter func() func()) {
	if h := o.CreateMessageHandler; h != nil {
		o.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			defer enter()()
			return h(ctx, req)
		}
	}
}
