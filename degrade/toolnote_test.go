package degrade_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// The note is short, fixed text that names the payload's status and the
// behaviour the guidance asks for, with no numbers and no markup.
func TestToolNoteText(t *testing.T) {
	n := degrade.ToolNote()
	if len(n) == 0 || len(n) > 200 {
		t.Fatalf("note is %d bytes, want 1-200: %q", len(n), n)
	}
	for _, want := range []string{`"unavailable"`, "tell the user", "continue without it"} {
		if !strings.Contains(n, want) {
			t.Errorf("note lacks %q: %q", want, n)
		}
	}
	for _, r := range n {
		if unicode.IsDigit(r) || unicode.IsControl(r) || strings.ContainsRune("<>&`\\", r) {
			t.Errorf("note contains %q: %q", r, n)
		}
	}
}

func TestWithToolNoteIsIdempotent(t *testing.T) {
	for _, desc := range []string{"Fetch one invoice by ID.", "", "  "} {
		once := degrade.WithToolNote(desc)
		if strings.Count(once, degrade.ToolNote()) != 1 || !strings.HasPrefix(once, strings.TrimSpace(desc)) {
			t.Errorf("WithToolNote(%q) = %q", desc, once)
		}
		if twice := degrade.WithToolNote(once); twice != once {
			t.Errorf("applied twice: %q", twice)
		}
		// The unavailable annotation composes with it, in either order.
		ann := degrade.Annotate(once, 0)
		if degrade.WithToolNote(ann) != ann || degrade.StripAnnotation(ann) != once {
			t.Errorf("annotation and note do not compose: %q", ann)
		}
	}
}
