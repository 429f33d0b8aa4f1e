package callbacks

import (
	"google.golang.org/adk/agent"
	"google.golang.org/adk/session"
)

// OnEvent is the runner's on-event callback (the plugin registers it). It
// sets Escalate on the final answer with which the handler ended a turn
// (a budget spent, the short-circuit limit reached, or no model endpoint
// left), so that an enclosing LoopAgent, which stops only on an escalating
// event, exits after that answer instead of running its sub-agents again.
// Without it a worker that only answers in text, or only calls tool names
// that do not exist, gives the handler no tool call to escalate on, and
// every later model call of the invocation would fail with ErrTurnEnded,
// iteration after iteration, for as long as the consumer keeps reading.
//
// The event is changed in place (ADK's LoopAgent checks the same event
// after the runner's callbacks ran) and OnEvent returns (nil, nil); any
// other event is left alone, at the cost of one map lookup.
func (h *Handler) OnEvent(_ agent.InvocationContext, ev *session.Event) (*session.Event, error) {
	if ev == nil || ev.Actions.Escalate || len(ev.CustomMetadata) == 0 {
		return nil, nil
	}
	if m, ok := ev.CustomMetadata["adkbreaker"].(map[string]any); ok && m["ended_turn"] == true {
		ev.Actions.Escalate = true
	}
	return nil, nil
}
