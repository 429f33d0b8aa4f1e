package degrade

import "strconv"

// Schema and status of the repeated-call note (RepeatNote).
const (
	// RepeatSchema is the value of the "schema" field of a repeated-call note.
	RepeatSchema = "adkbreaker.repeated_call/v1"
	// StatusRepeated is the value of its "status" field.
	StatusRepeated = "repeated_call"
)

// Keys of a repeated-call note besides KeyStatus, KeySchema, KeyTool and
// KeyGuidance.
const (
	// KeyEarlierCalls holds how many times the tool was already called with
	// the same arguments in the turn (a float64, as encoding/json decodes it).
	KeyEarlierCalls = "earlier_calls"
	// KeyTurnEnded holds true on the note of the call that ends the turn.
	KeyTurnEnded = "turn_ended"
)

// RepeatNote returns the tool result given instead of running tool again,
// when the model calls it with the same arguments as `earlier` calls
// before it in one turn. It is fixed text around the tool's SafeName: it
// carries nothing from the tool's earlier answers (they are in the
// conversation already; the note says so) nor from any upstream error.
// endsTurn says that the turn ends after this call.
func RepeatNote(tool string, earlier int, endsTurn bool) map[string]any {
	return repeatNote(tool, earlier, endsTurn, false)
}

// RepeatNoteOutage is RepeatNote for a tool whose dependency was
// unavailable in the turn (or is not fully back): the note does not invite
// another call with other arguments, which would reach the same
// dependency; it says to use the answer above or answer without the tool.
func RepeatNoteOutage(tool string, earlier int, endsTurn bool) map[string]any {
	return repeatNote(tool, earlier, endsTurn, true)
}

func repeatNote(tool string, earlier int, endsTurn, outage bool) map[string]any {
	name := SafeName(tool)
	g := "You already called " + name + " with these arguments " + times(earlier) +
		" in this turn; its answer is in the conversation above and will not change now. Do not call " + name +
		" again with the same arguments: use that answer, change the arguments, or answer the user with what you have."
	if outage {
		g = "You already called " + name + " with these arguments " + times(earlier) +
			" in this turn; its answer is in the conversation above and will not change now, and its service is not reliably available. Do not call " +
			name + " again in this turn: use that answer, or answer the user with what you have."
	}
	if endsTurn {
		g = "You called " + name + " with the same arguments " + times(earlier+1) +
			" in this turn. The turn is ending now: do not call any tool; answer the user with what you have."
	}
	return map[string]any{
		KeyStatus:       StatusRepeated,
		KeySchema:       RepeatSchema,
		KeyTool:         name,
		KeyEarlierCalls: float64(earlier),
		KeyTurnEnded:    endsTurn,
		KeyGuidance:     g,
	}
}

// RepeatedCallMessage returns the text of a final response written for the
// end user, for when an invocation stops because the model kept calling
// tool with the same arguments, for example:
//
//	Sorry, I couldn't complete your request: I kept repeating the same step (get_invoice with the same details) without getting further. Please try again, perhaps rephrasing your request.
func RepeatedCallMessage(tool string) string {
	return "Sorry, I couldn't complete your request: I kept repeating the same step (" + SafeName(tool) +
		" with the same details) without getting further. Please try again, perhaps rephrasing your request."
}

// RepeatedCallMessageDuring is RepeatedCallMessage for a turn in which
// dependencies were unavailable (items, as for FinalMessage): it names them
// and says when to try again, for example:
//
//	Sorry, I couldn't complete your request: I kept repeating the same step (get_invoice with the same details) while billing-api was temporarily unavailable. Please try again in about 30 seconds.
//
// With no items it is RepeatedCallMessage. At most MaxMessageBytes.
func RepeatedCallMessageDuring(tool string, items []Unavailable) string {
	if len(items) == 0 {
		return RepeatedCallMessage(tool)
	}
	lead := "Sorry, I couldn't complete your request: I kept repeating the same step (" + SafeName(tool) + " with the same details) while "
	names, when := unavailableNames(items)
	switch len(names) {
	case 0:
		return lead + "a service it depends on was temporarily unavailable. " + when
	case 1:
		if len(lead)+len(names[0])+len(when)+40 <= MaxMessageBytes {
			return lead + names[0] + " was temporarily unavailable. " + when
		}
		return lead + "a service it depends on was temporarily unavailable. " + when
	}
	return fitList(names, MaxMessageBytes, func(list string) string {
		return lead + list + " were temporarily unavailable. " + when
	}, "other service", "other services")
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}
