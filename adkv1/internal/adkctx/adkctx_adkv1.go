package adkctx

import "google.golang.org/adk/agent"

// Line is the ADK Go line this build of adkbreaker serves.
const Line = "v1"

// Tool returns v as a tool context, or false when v is not one (nil, a
// callback context, or anything else).
func Tool(v any) (agent.ToolContext, bool) {
	tc, ok := v.(agent.ToolContext)
	return tc, ok && tc != nil
}
