package degrade

// Status and schema of the note a tool call gets when the turn's time ran
// out while it was running (TurnDeadlineNote).
const (
	StatusTurnDeadline = "turn_deadline"
	TurnDeadlineSchema = "adkbreaker.turn_deadline/v1"
)

// TurnDeadlineNote returns the tool result given in place of a call that the
// turn's time limit cut (or that would have started after it). It is fixed
// text around the tool's SafeName: nothing of the call's own error.
func TurnDeadlineNote(tool string) map[string]any {
	name := SafeName(tool)
	return map[string]any{
		KeyStatus:   StatusTurnDeadline,
		KeySchema:   TurnDeadlineSchema,
		KeyTool:     name,
		KeyGuidance: "The time allowed for this answer ran out while " + name + " was running, so it was stopped. Do not call any tool; answer the user now with what you have.",
	}
}
