package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

var (
	// linkRE matches inline Markdown links and images: [text](target).
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// headingRE matches ATX headings.
	headingRE = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	// anchorRE matches explicit HTML anchors.
	anchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	fenceRE  = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```[ \t]*$")
)

// TestDocsLinksResolve: every relative link in the repository's Markdown
// points at a file (or directory) of the repository, every #fragment at a
// heading or anchor of its target, and nothing links outside the
// repository (the docs ship without ../shared).
func TestDocsLinksResolve(t *testing.T) {
	docs := markdownFiles(t)
	if len(docs) < 10 {
		t.Fatalf("found %d Markdown files under %s: wrong root?", len(docs), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := anchorsIn(string(src))
		anchors[path] = a
		return a
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(src), "") // code blocks hold no links
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := doc
			if file != "" {
				dest = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				abs, err := filepath.Abs(dest)
				if err != nil {
					t.Fatal(err)
				}
				if rel, err := filepath.Rel(absRoot, abs); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s: link %q leaves the repository", rel0(doc), target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no such file", rel0(doc), target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !anchorsOf(dest)[frag] {
				t.Errorf("%s: link %q: %s has no heading or anchor %q", rel0(doc), target, rel0(dest), frag)
			}
		}
	}
}

// TestAnchors pins the heading slugs to GitHub's rules.
func TestAnchors(t *testing.T) {
	a := anchorsIn("# Benchmarks\n## Guarded calls admitted in `GuardedTool.Run` (2026-12-01, second round)\n### Per-call timeout\n## Per-call timeout\n<a id=\"custom\"></a>\n```\n# not a heading\n```\n")
	for _, want := range []string{"benchmarks", "guarded-calls-admitted-in-guardedtoolrun-2026-12-01-second-round", "per-call-timeout", "per-call-timeout-1", "custom"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}

func rel0(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// anchorsIn returns the fragment names a Markdown document defines, as GitHub
// renders them: one per heading (lowercased; punctuation other than '-' and
// '_' dropped; spaces to '-'; repeats suffixed -1, -2, …) and one per
// explicit <a id> or <a name>.
func anchorsIn(src string) map[string]bool {
	out := map[string]bool{}
	for _, m := range anchorRE.FindAllStringSubmatch(src, -1) {
		out[m[1]] = true
	}
	src = fenceRE.ReplaceAllString(src, "")
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(src, -1) {
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slugify(h string) string {
	h = mdLinkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
