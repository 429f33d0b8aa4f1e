// Package docscheck supports the tests that keep the docs honest: it lists
// the exported With… options a package declares (for docs/configuration.md),
// and its own tests check that every relative link and #fragment in the
// repository's Markdown resolves inside the repository, and that every
// ```go block of README.md and docs/*.md compiles against the module's
// packages (GoBlock says how a fragment is checked and how it declares the
// variables it uses).
package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var optionRE = regexp.MustCompile(`(?m)^func (With\w+)\(`)

// Options returns the With… functions declared in the non-test Go files
// matching glob, each with the file it is in.
func Options(t testing.TB, glob string) (names, files []string) {
	t.Helper()
	matches, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range matches {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range optionRE.FindAllStringSubmatch(string(src), -1) {
			names, files = append(names, m[1]), append(files, filepath.Base(name))
		}
	}
	return names, files
}

// Block returns the fenced block between "<!-- BEGIN name" and
// "<!-- END name -->" in doc, without its fences; it fails t when there is
// none.
func Block(t testing.TB, doc, name string) string {
	t.Helper()
	begin := strings.Index(doc, "<!-- BEGIN "+name)
	end := strings.Index(doc, "<!-- END "+name+" -->")
	if begin < 0 || end < begin {
		t.Fatalf("no block %s", name)
	}
	block := doc[begin:end]
	block = block[strings.Index(block, "\n```")+1:]
	block = block[strings.Index(block, "\n")+1:] // drop the opening fence
	close := strings.LastIndex(block, "```")
	if close < 0 {
		t.Fatalf("block %s is not fenced", name)
	}
	return block[:close]
}
