package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// readmeBlocks returns the lines of README.md's plain fenced blocks (the
// transcripts; shell blocks are commands), without the "…" elisions.
func readmeBlocks(t *testing.T) [][]string {
	t.Helper()
	// From the repository root: the ADK v2 line's copy of this test reads
	// the same file.
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && line == "```":
			in, cur = true, nil
		case !in && strings.HasPrefix(line, "```"):
			in, cur = true, []string{"\x00skip"}
		case in && line == "```":
			in = false
			if len(cur) > 0 && cur[0] != "\x00skip" {
				blocks = append(blocks, cur)
			}
		case in && strings.TrimSpace(line) != "…" && strings.TrimSpace(line) != "":
			cur = append(cur, line)
		}
	}
	return blocks
}

// capture runs fn with os.Stdout redirected and returns what it printed.
func capture(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	runErr := fn()
	os.Stdout = stdout
	w.Close()
	out := <-done
	if runErr != nil {
		t.Fatal(runErr)
	}
	return string(out)
}

// TestReadmeShowsWhatTheRunPrints: every line of the README's transcripts
// is printed by the sample, in the same order (the story on the fake clock
// is deterministic; the partial-429 storm is seeded).
func TestReadmeShowsWhatTheRunPrints(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	outputs := []string{
		capture(t, func() error { return runOffline(t.Context(), logger) }),
		capture(t, func() error { return runPartial429(t.Context()) }),
	}
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no transcript in README.md")
	}
	for i, block := range blocks {
		matched := false
		for _, out := range outputs {
			if inOrder(out, block) {
				matched = true
			}
		}
		if !matched {
			t.Errorf("README transcript %d is not what the sample prints:\n%s\n--- the runs printed:\n%s", i+1,
				strings.Join(block, "\n"), strings.Join(outputs, "\n---\n"))
		}
	}
}

// inOrder reports whether every line appears in out as a whole line, in order.
func inOrder(out string, lines []string) bool {
	rest := []byte(out)
	for _, l := range lines {
		i := bytes.Index(rest, []byte(l+"\n"))
		if i < 0 || (i > 0 && rest[i-1] != '\n') {
			return false
		}
		rest = rest[i+len(l)+1:]
	}
	return true
}
