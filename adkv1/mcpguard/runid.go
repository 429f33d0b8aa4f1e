package mcpguard

import "context"

// invocationID returns the ADK invocation ID of ctx when ctx is an ADK
// context (a tool call's, or the context Toolset.Tools is asked with), or "".
// Failure lines carry it, so that a person can tell which run a failure cut
// (what an operator needs from a failure line: run, server, boundary,
// limit).
func invocationID(ctx context.Context) string {
	if c, ok := ctx.(interface{ InvocationID() string }); ok {
		return c.InvocationID()
	}
	return ""
}
