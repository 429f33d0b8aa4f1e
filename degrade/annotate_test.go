package degrade_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func TestAnnotate(t *testing.T) {
	const desc = "Searches the web."
	got := degrade.Annotate(desc, 26500*time.Millisecond)
	want := "[UNAVAILABLE: temporarily unavailable, retry in about 27s. Do not call this tool now.] Searches the web."
	if got != want {
		t.Fatalf("Annotate = %q, want %q", got, want)
	}
	if s := degrade.StripAnnotation(got); s != desc {
		t.Errorf("StripAnnotation = %q, want %q", s, desc)
	}
}

func TestAnnotateIdempotent(t *testing.T) {
	tests := []struct {
		desc  string
		first time.Duration
		then  time.Duration
	}{
		{"Searches the web.", 27 * time.Second, 3 * time.Second},
		{"", time.Second, time.Hour},
		{"[UNAVAILABLE: a tool that talks about itself]", 0, 5 * time.Second},
		{"Line one.\nLine two.", 48 * time.Hour, -time.Second},
	}
	for _, tt := range tests {
		once := degrade.Annotate(tt.desc, tt.then)
		if again := degrade.Annotate(once, tt.then); again != once {
			t.Errorf("Annotate twice = %q, want %q", again, once)
		}
		if replaced := degrade.Annotate(degrade.Annotate(tt.desc, tt.first), tt.then); replaced != once {
			t.Errorf("re-annotating = %q, want %q", replaced, once)
		}
		stacked := degrade.Annotate(tt.desc, tt.first)
		for range 5 {
			stacked = degrade.Annotate(stacked, tt.then)
		}
		if stacked != once {
			t.Errorf("annotations stacked: %q", stacked)
		}
		if s := degrade.StripAnnotation(once); s != tt.desc {
			t.Errorf("StripAnnotation(%q) = %q, want %q", once, s, tt.desc)
		}
	}
}

func TestStripAnnotationLeavesOtherText(t *testing.T) {
	for _, desc := range []string{
		"",
		"Searches the web.",
		"[UNAVAILABLE: temporarily unavailable, retry in about s. Do not call this tool now.] x",
		"[UNAVAILABLE: temporarily unavailable, retry in about 12345s. Do not call this tool now.] x",
		"[UNAVAILABLE: temporarily unavailable, retry in about 12s. Do call this tool now.] x",
		"Note: [UNAVAILABLE: temporarily unavailable, retry in about 27s. Do not call this tool now.] x",
	} {
		if got := degrade.StripAnnotation(desc); got != desc {
			t.Errorf("StripAnnotation(%q) = %q, want it unchanged", desc, got)
		}
	}
}
