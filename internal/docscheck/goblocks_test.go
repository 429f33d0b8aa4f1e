package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsGoBlocksCompile: every ```go block of README.md and docs/*.md
// type-checks against this module's packages (see GoBlock for how a
// fragment is checked).
func TestDocsGoBlocksCompile(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var blocks []GoBlock
	for _, d := range docs {
		bs, err := GoBlocks(d)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) < 20 {
		t.Fatalf("found %d ```go blocks: wrong root?", len(blocks))
	}
	errs, skipped := CheckGoBlocks(".", blocks)
	for _, err := range errs {
		t.Error(strings.ReplaceAll(err.Error(), root+string(filepath.Separator), ""))
	}
	for _, s := range skipped {
		t.Log("not checked in this module:", s)
	}
}

// TestCheckGoBlocksFails: a block that does not compile is reported, with
// its file, line and the compiler's message; what a fragment may leave out
// is not.
func TestCheckGoBlocksFails(t *testing.T) {
	blocks := []GoBlock{
		{File: "ok.md", Line: 1, Src: "reg := registry.MustNew()\np, err := breaker.New(breaker.WithRegistry(reg), breaker.WithLogger(logger))\nif err != nil { … }\n", Given: []string{"logger *slog.Logger"}},
		{File: "ok.md", Line: 9, Src: "a, _ := llmagent.New(llmagent.Config{Name: \"a\", ...})\n"},
		{File: "ok.md", Line: 12, Src: "import \"time\"\n\nvar d = 3 * time.Second\n"},
		{File: "ok.md", Line: 16, Src: "func f() error {\n\treturn reg.Isolate(\"x\")\n}\n", Given: []string{"reg *registry.Registry"}},
		{File: "bad.md", Line: 3, Src: "p, err := breaker.New(breaker.WithNoSuchOption())\n"},
		{File: "bad.md", Line: 7, Src: "import \"time\"\n\nreg.Isolate(42 * time.Second)\n", Given: []string{"reg *registry.Registry"}},
		{File: "bad.md", Line: 11, Src: "p := breaker.MustNew(breaker.WithLogger(logger))\n"}, // logger not given
		{File: "bad.md", Line: 14, Src: "func f() {\n"},
	}
	errs, _ := CheckGoBlocks(".", blocks)
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"bad.md:4: undefined: breaker.WithNoSuchOption", "bad.md:10: cannot use 42 * time.Second", "bad.md:12: undefined: logger", "bad.md:14:"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in the errors:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "ok.md") || len(errs) != 4 {
		t.Errorf("%d errors, want the 4 bad blocks only:\n%s", len(errs), joined)
	}
}

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
