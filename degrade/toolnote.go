package degrade

import (
	_ "embed"
	"strings"
)

// toolNote is the standing sentence WithToolNote adds to a protected tool's
// description (the tool's description "is the model's only specification
// of the tool"). It is fixed text, embedded like the guidance templates and
// tested with them: short, no names, no numbers, and worded like the
// payload it announces (status "unavailable", do not retry, tell the user).
//
//go:embed templates/tool_note.txt
var toolNoteText string

var toolNote = strings.TrimSpace(toolNoteText)

// ToolNote returns the standing sentence WithToolNote adds.
func ToolNote() string { return toolNote }

// WithToolNote returns description with ToolNote appended, separated by a
// blank line. It is idempotent: a description that already carries the note
// is returned unchanged, so a declaration reused across turns is never
// annotated twice.
func WithToolNote(description string) string {
	if strings.Contains(description, toolNote) {
		return description
	}
	if strings.TrimSpace(description) == "" {
		return toolNote
	}
	return description + "\n\n" + toolNote
}
