//go:build ignore

package adkctx

import (
	"reflect"
	"sync/atomic"
	"unsafe"

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

// FrameworkTool reports whether t is one of the tools ADK installs itself
// (llmagent.New, internal/workflowinternal) to delegate to a sub-agent or
// end a task: the agent tool of a task-mode sub-agent (its calls are
// dispatched by the caller's chat loop, which runs the sub-agent as a
// workflow node), the agent tool of a single_turn sub-agent (its Run runs
// the sub-agent as a node), and a task-mode agent's finish_task. None is a
// dependency of its own: the sub-agent's calls meet their breakers inside,
// in the same invocation.
//
// A type is recognised by its package path (ADK v2's
// internal/workflowinternal) and name, so a type of the same name elsewhere
// is not one. The answer is remembered per dynamic type (up to maxSeenTypes
// of them): a tool's type word is compared with a few remembered ones, and
// its path and name are read once. (The word is read through unsafe, as
// reflect.TypeOf reads it: comparing reflect.Type values instead calls the
// runtime's interface comparison for each remembered type, which doubles
// the cost of this check on every tool call, 7.7 → 14.5 ns.)
func FrameworkTool(t any) bool {
	if t == nil {
		return false
	}
	tw := (*[2]unsafe.Pointer)(unsafe.Pointer(&t))[0] // the dynamic type's word
	cur := seenTypes.Load()
	if cur != nil {
		for _, k := range *cur {
			if k.t == tw {
				return k.framework
			}
		}
	}
	fw := frameworkType(reflect.TypeOf(t))
	if cur == nil || len(*cur) < maxSeenTypes {
		var next []seenType
		if cur != nil {
			next = append(next, *cur...)
		}
		next = append(next, seenType{t: tw, framework: fw})
		seenTypes.CompareAndSwap(cur, &next) // a lost race only reads the name again later
	}
	return fw
}

// workflowInternal is the package of ADK v2's framework tools.
const workflowInternal = "google.golang.org/adk/v2/internal/workflowinternal"

// frameworkType reports whether t is a pointer to one of ADK v2's
// framework tool types.
func frameworkType(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer || t.Elem().PkgPath() != workflowInternal {
		return false
	}
	switch t.Elem().Name() {
	case "TaskAgentTool", "SingleTurnTool", "FinishTaskTool":
		return true
	}
	return false
}

// seenTypes remembers FrameworkTool's answers by dynamic type.
var seenTypes atomic.Pointer[[]seenType]

type seenType struct {
	t         unsafe.Pointer // the type word of an interface holding the type
	framework bool
}

// maxSeenTypes bounds seenTypes: a process has a few tool types.
const maxSeenTypes = 32
