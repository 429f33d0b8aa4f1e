package redact_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/redact"
)

// loadProse reads testdata/prose.txt: one sentence a line.
func loadProse(tb testing.TB) []string {
	tb.Helper()
	f, err := os.Open("testdata/prose.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

// TestTextKeepsToolProse: ordinary tool descriptions and error messages —
// labels such as "Auth:" and "Password:" followed by a sentence, page
// tokens, counts of tokens, words like session, cookie, bearer and basic
// used as words — come out of Text as they went in, and Sensitive finds no
// secret in them.
func TestTextKeepsToolProse(t *testing.T) {
	lines := loadProse(t)
	if len(lines) < 200 {
		t.Fatalf("corpus has %d sentences, want at least 200", len(lines))
	}
	damaged := 0
	for _, in := range lines {
		if got := redact.Text(in, 4096); got != in {
			damaged++
			t.Errorf("Text(%q) = %q, want it unchanged", in, got)
		}
		if redact.Sensitive(in) {
			t.Errorf("Sensitive(%q) = true, want false", in)
		}
	}
	if damaged > 0 {
		t.Errorf("%d of %d sentences damaged", damaged, len(lines))
	}
}

// TestTextLabelledValues: a label's value is redacted when it is a
// credential — a single token that is not a plain word, a value after "="
// or in quotes, a word with nothing after it — and kept when a sentence
// goes on after a plain word.
func TestTextLabelledValues(t *testing.T) {
	for _, in := range []string{
		"password: hunter2xyz",
		"Password: hunter2xyz was rejected",
		"password: s3cret, user: bob",
		"password: letmein",
		"password: letmein, user: bob",
		"password=secret is wrong",
		"Password:letmein rejected",
		"auth: Zm9vYmFyYmF6 (basic)",
		"token: ab12cd34ef56",
		"Token: Abc-123-Def-456 expired",
		"session_id: 8f14e45fceea167a expired",
		"X-Api-Key: FAKE-0000-1111-2222-3333 rejected",
		`{"password": "correct horse battery staple"}`,
		"{'secret': 'plain words here'}",
		"Authorization: Bearer abcdefghij rejected",
		"Authorization: Basic abcdefghij was refused",
		"Bearer abcdefghij",
		"token abc123def456 expired",
	} {
		got := redact.Text(in, 4096)
		if !strings.Contains(got, redact.Redacted) {
			t.Errorf("Text(%q) = %q, want the value redacted", in, got)
		}
		if !redact.Sensitive(in) {
			t.Errorf("Sensitive(%q) = false, want true", in)
		}
	}
}
