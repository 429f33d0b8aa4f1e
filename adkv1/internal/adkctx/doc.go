// Package adkctx holds the few lines that differ between the ADK Go lines
// adkbreaker serves, so that the rest of the tree reads the same on both.
//
// On ADK v1 a tool context (agent.ToolContext) and a callback context
// (agent.CallbackContext) are different types. ADK v2 merges them into one
// agent.Context that every context implements; a callback context answers
// the tool-only methods (FunctionCallID, Actions, …) with zero values and a
// line on the standard logger. [Tool] tells them apart on both lines without
// calling any of those methods. [FrameworkTool] recognises the tools ADK v2
// installs itself for task-mode and single_turn sub-agents.
package adkctx
