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
	name := SafeName(tool)
	g := "You already called " + name + " with these arguments " + times(earlier) +
		" in this turn; its answer is in the conversation above and will not change now. Do not call " + name +
		" again with the same arguments: use that answer, change the arguments, or answer the user with what you have."
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

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}
