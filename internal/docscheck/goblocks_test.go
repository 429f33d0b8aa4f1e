package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoBlocksGiven: the names a block is given are read from the line
// before its fence.
func TestGoBlocksGiven(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "x.md")
	writeFile(t, md, "text\n\n<!-- docscheck: given agent agent.Agent; ctx context.Context -->\n```go\nx := 1\n```\n\n```go\ny := 2\n```\n")
	bs, err := GoBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || strings.Join(bs[0].Given, ",") != "agent agent.Agent,ctx context.Context" || bs[0].Line != 4 || bs[1].Given != nil || bs[1].Src != "y := 2\n" {
		t.Errorf("blocks = %+v", bs)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
