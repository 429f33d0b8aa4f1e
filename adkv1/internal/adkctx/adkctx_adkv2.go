//go:build ignore

package adkctx

import (
	"reflect"

	"google.golang.org/adk/v2/agent"
)

// Line is the ADK Go line this build of adkbreaker serves.
const Line = "v2"

// callbackContextType is the dynamic type of the contexts ADK v2 passes to
// callbacks (agent.NewCallbackContext). Its tool-only methods return zero
// values and log "… is not supported for callback context".
const callbackContextType = "*agent.callbackContextWrapper"

// Tool returns v as a tool context, or false when v is not one (nil, a
// callback context, or anything else). In ADK v2 every context is an
// agent.Context, so a callback context is recognised by its type, without
// calling a method that would log.
func Tool(v any) (agent.Context, bool) {
	c, ok := v.(agent.Context)
	if !ok || c == nil || reflect.TypeOf(c).String() == callbackContextType {
		return nil, false
	}
	return c, true
}
