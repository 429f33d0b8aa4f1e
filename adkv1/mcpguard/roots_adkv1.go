package mcpguard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Root is a root the client offers the server (roots/list; Server.Roots).
type Root = mcp.Root

func addRoots(c *mcp.Client, roots []*Root) { c.AddRoots(roots...) }

// timeSampling times the user's sampling handler like the elicitation
// handler (see handlerClock): enter marks the time spent in it.
func timeSampling(o *mcp.ClientOptions, enter func() func()) {
	if h := o.CreateMessageHandler; h != nil {
		o.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			defer enter()()
			return h(ctx, req)
		}
	}
}
