package docstest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/internal/docscheck"

	// Packages only the docs import (docs/dashboards.md mounts the status
	// page beside ADK's web UI): imported here so that their modules are in
	// this module's graph and the docs' blocks are checked against them.
	_ "google.golang.org/adk/cmd/launcher/web/api"
	_ "google.golang.org/adk/cmd/launcher/web/webui"
)

// The docs are written for the primary line (ADK v2); this is the line
// this module checks them on.
var line = docscheck.Line{ADK: "google.golang.org/adk/", Adapter: "github.com/adkbreaker/adkbreaker/adkv1/"}

// root is the repository's root, where README.md and docs/ are.
const root = "../../.."

// TestDocsGoBlocksCompile: every ```go block of README.md and docs/*.md
// type-checks against this module's packages (see GoBlock for how a
// fragment is checked).
func TestDocsGoBlocksCompile(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var blocks []docscheck.GoBlock
	for _, d := range docs {
		bs, err := docscheck.GoBlocks(d)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) < 20 {
		t.Fatalf("found %d ```go blocks: wrong root?", len(blocks))
	}
	errs, skipped := docscheck.CheckGoBlocks(".", line, blocks)
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
	blocks := []docscheck.GoBlock{
		{File: "ok.md", Line: 1, Src: "reg := registry.MustNew()\np, err := breaker.New(breaker.WithRegistry(reg), breaker.WithLogger(logger))\nif err != nil { … }\n", Given: []string{"logger *slog.Logger"}},
		{File: "ok.md", Line: 9, Src: "a, _ := llmagent.New(llmagent.Config{Name: \"a\", ...})\n"},
		{File: "ok.md", Line: 12, Src: "import \"time\"\n\nvar d = 3 * time.Second\n"},
		{File: "ok.md", Line: 16, Src: "func f() error {\n\treturn reg.Isolate(\"x\")\n}\n", Given: []string{"reg *registry.Registry"}},
		{File: "bad.md", Line: 3, Src: "p, err := breaker.New(breaker.WithNoSuchOption())\n"},
		{File: "bad.md", Line: 7, Src: "import \"time\"\n\nreg.Isolate(42 * time.Second)\n", Given: []string{"reg *registry.Registry"}},
		{File: "bad.md", Line: 11, Src: "p := breaker.MustNew(breaker.WithLogger(logger))\n"}, // logger not given
		{File: "bad.md", Line: 14, Src: "func f() {\n"},
	}
	errs, _ := docscheck.CheckGoBlocks(".", line, blocks)
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
