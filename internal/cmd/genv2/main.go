// Command genv2 writes v2/, the module github.com/adkbreaker/adkbreaker/v2
// for ADK Go v2, from the repository's source tree, which is written for
// ADK Go v1. Run it with `go generate ./...` from the repository root; CI
// fails when v2/ differs from what it writes.
//
// What it does to every package directory of the root module (everything
// but docs/, dashboards/, scripts/, hidden directories, this command and
// v2/ itself):
//
//   - Go files are copied with these rewrites, then gofmt-ed:
//     import paths google.golang.org/adk/... become google.golang.org/adk/v2/...,
//     github.com/adkbreaker/adkbreaker/... become github.com/adkbreaker/adkbreaker/v2/...;
//     agent.ToolContext and agent.CallbackContext become agent.Context (ADK v2's
//     unified context); a relative path literal in a test that leaves the
//     copied tree ("../docs/…", "../../dashboards/…", or any Markdown file,
//     written as a path from the repository root such as
//     "../../samples/failover/README.md") gains one "../", so both lines read
//     the repository's one copy.
//   - Files named *_adkv1.go (and *_adkv1_test.go) are the ADK v1 halves of a
//     per-line pair: they are not copied. Files named *_adkv2.go begin with
//     "//go:build ignore" (so the root module never builds them): that line is
//     dropped.
//   - Other files (templates, testdata, embedded assets) are copied as they are;
//     Markdown is not (the docs live once, at the root), nor anything git
//     ignores (test binaries, profiles).
//
// v2/go.mod, v2/go.sum and v2/README.md are the v2 line's own, kept by hand:
// genv2 never writes them. Every other file under v2/ is removed first, so a
// file deleted at the root disappears from v2/ too.
//
// With -check, genv2 writes nothing and exits 1 when v2/ is stale.
package main

//go:generate go run .

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	outDir    = "v2"
	selfDir   = "internal/cmd/genv2"
	modPath   = "github.com/adkbreaker/adkbreaker"
	adkPath   = "google.golang.org/adk"
	ignoreTag = "//go:build ignore"
)

// skipDirs are root directories that are not part of any package's build.
var skipDirs = map[string]bool{outDir: true, selfDir: true, "docs": true, "dashboards": true, "scripts": true}

// kept are the v2 line's own files: genv2 neither writes nor removes them.
var kept = map[string]bool{"go.mod": true, "go.sum": true, "README.md": true}

func main() {
	check := flag.Bool("check", false, "report whether v2/ is stale; write nothing")
	flag.Parse()
	root, err := findRoot()
	if err != nil {
		fail(err)
	}
	want, err := generate(root)
	if err != nil {
		fail(err)
	}
	have, err := current(filepath.Join(root, outDir))
	if err != nil {
		fail(err)
	}
	stale := diff(want, have)
	if *check {
		if len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "genv2: %s is stale (run go generate ./...): %s\n", outDir, strings.Join(stale, ", "))
			os.Exit(1)
		}
		return
	}
	for _, rel := range stale {
		path := filepath.Join(root, outDir, filepath.FromSlash(rel))
		b, ok := want[rel]
		if !ok {
			if err := os.Remove(path); err != nil {
				fail(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fail(err)
		}
	}
	removeEmptyDirs(filepath.Join(root, outDir))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genv2:", err)
	os.Exit(1)
}

// findRoot returns the directory of the root module's go.mod, searching up
// from the working directory.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && regexp.MustCompile(`(?m)^module `+regexp.QuoteMeta(modPath)+`\s*$`).Match(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the root module's go.mod is not above the working directory")
		}
		dir = parent
	}
}

// generate returns the files v2/ should hold, by slash path relative to v2/.
func generate(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	skip := gitIgnored(root)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipDirs[rel]) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.Contains(rel, "/") || strings.HasSuffix(rel, ".md") || !d.Type().IsRegular() || skip[rel] {
			return nil // root files (go.mod, README, …), docs and what git ignores (test binaries, profiles) are not copied
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(rel, ".go") {
			out[rel] = src
			return nil
		}
		base := strings.TrimSuffix(strings.TrimSuffix(d.Name(), ".go"), "_test")
		if strings.HasSuffix(base, "_adkv1") {
			return nil
		}
		b, err := rewrite(rel, src, strings.HasSuffix(base, "_adkv2"))
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		out[rel] = b
		return nil
	})
	return out, err
}

var (
	// ctxTypes are ADK v1's two context types; ADK v2 has one.
	ctxTypes = regexp.MustCompile(`\bagent\.(ToolContext|CallbackContext)\b`)
	// relPath matches a string literal that is a relative path upwards.
	relPath = regexp.MustCompile(`"((?:\.\./)*\.\.)(/[^"\n]*)?"`)
)

// rewrite turns one root Go file into its v2 form.
func rewrite(rel string, src []byte, v2only bool) ([]byte, error) {
	s := string(src)
	if v2only {
		first, rest, _ := strings.Cut(s, "\n")
		if strings.TrimSpace(first) != ignoreTag {
			return nil, fmt.Errorf("an _adkv2 file must begin with %q", ignoreTag)
		}
		s = strings.TrimLeft(rest, "\n")
	} else {
		s = toV2(s, adkPath+"/")
	}
	s = toV2(s, modPath)
	if !v2only {
		s = ctxTypes.ReplaceAllString(s, "agent.Context")
	}
	s = relPath.ReplaceAllStringFunc(s, func(m string) string { return outsidePath(rel, m) })
	header := "// Code generated by internal/cmd/genv2 from " + rel + "; DO NOT EDIT.\n\n"
	b, err := format.Source([]byte(header + s))
	if err != nil {
		return nil, fmt.Errorf("gofmt after rewriting: %w", err)
	}
	return b, nil
}

// toV2 rewrites every module path that starts with prefix (in imports and
// in comments) to the module's v2 path, leaving paths already on v2.
// prefix is either "google.golang.org/adk/" (packages of ADK) or this
// module's path, which may be followed by "/", a quote or a word boundary.
func toV2(s, prefix string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(prefix)
		b.WriteString(s[:j])
		rest := s[j:]
		slash := strings.HasSuffix(prefix, "/")
		switch {
		case slash && !strings.HasPrefix(rest, "v2/"):
			b.WriteString("v2/")
		case !slash && !strings.HasPrefix(rest, "/v2/") && !strings.HasPrefix(rest, "/v2\"") &&
			(rest == "" || !isPathChar(rest[0]) || rest[0] == '/'):
			b.WriteString("/v2")
		}
		s = rest
	}
}

func isPathChar(c byte) bool {
	return c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// outsidePath adds one "../" to a relative path literal of file rel that
// leaves the copied tree (it resolves to the repository root or to a root
// directory genv2 does not copy), so that from v2/ it reaches the same file.
func outsidePath(rel, lit string) string {
	p := strings.Trim(lit, `"`)
	target := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), p)))
	if strings.HasPrefix(target, "..") {
		return lit // outside the repository: not ours to move
	}
	first, _, _ := strings.Cut(target, "/")
	if target == "." || skipDirs[first] || strings.HasSuffix(target, ".md") { // Markdown is never copied
		return `"../` + p + `"`
	}
	return lit
}

// gitIgnored returns the files below root that git ignores (build
// artifacts such as *.test and profiles), by slash path relative to root;
// none outside a git checkout.
func gitIgnored(root string) map[string]bool {
	out, err := exec.Command("git", "-C", root, "ls-files", "--others", "--ignored", "--exclude-standard").Output()
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			m[l] = true
		}
	}
	return m
}

// current returns the files under dir that genv2 owns.
func current(dir string) (map[string][]byte, error) {
	have := map[string][]byte{}
	skip := gitIgnored(filepath.Dir(dir))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if kept[rel] || skip[outDir+"/"+rel] {
			return nil
		}
		b, err := os.ReadFile(path)
		have[rel] = b
		return err
	})
	return have, err
}

// diff returns the paths whose content differs (or that exist on one side only), sorted.
func diff(want, have map[string][]byte) []string {
	var out []string
	for p, b := range want {
		if h, ok := have[p]; !ok || !bytes.Equal(h, b) {
			out = append(out, p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func removeEmptyDirs(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i > 0; i-- {
		os.Remove(dirs[i]) // fails, harmlessly, unless empty
	}
}
