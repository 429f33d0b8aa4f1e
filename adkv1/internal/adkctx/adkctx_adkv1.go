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

// FrameworkTool reports whether t is one of the tools ADK installs itself to
// delegate to a sub-agent or end a task (ADK v2's task and single_turn agent
// tools, finish_task): ADK v1 has none.
func FrameworkTool(t any) bool { return false }
