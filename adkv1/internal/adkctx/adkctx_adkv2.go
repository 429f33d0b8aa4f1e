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
// The answer is remembered per dynamic type (up to maxSeenTypes of them):
// a tool's type is compared with a few remembered ones, its name is read
// once.
func FrameworkTool(t any) bool {
	if t == nil {
		return false
	}
	tw := (*[2]unsafe.Pointer)(unsafe.Pointer(&t))[0] // the dynamic type's word, as reflect.TypeOf reads it
	cur := seenTypes.Load()
	if cur != nil {
		for _, k := range *cur {
			if k.t == tw {
				return k.framework
			}
		}
	}
	fw := frameworkTypeName(reflect.TypeOf(t).String())
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

func frameworkTypeName(name string) bool {
	switch name {
	case "*workflowinternal.TaskAgentTool", "*workflowinternal.SingleTurnTool", "*workflowinternal.FinishTaskTool":
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
