// Command genadkv2 writes adkv2/, the module
// github.com/adkbreaker/adkbreaker/adkv2 (adkbreaker's adapter for ADK Go
// v2), from adkv1/, the adapter for ADK Go v1, which is the source. Run it
// with `go generate ./...` from the repository root; CI fails when adkv2/
// differs from what it writes. The core module (the repository root) is not
// copied: both adapters import it.
//
// What it does to every file of adkv1/ (nested modules, hidden directories
// and what git ignores are left out):
//
//   - Go files are copied with these rewrites, then gofmt-ed: import paths
//     google.golang.org/adk/... become google.golang.org/adk/v2/...,
//     github.com/adkbreaker/adkbreaker/adkv1/... become
//     github.com/adkbreaker/adkbreaker/adkv2/... (the core's paths are left
//     as they are); agent.ToolContext and agent.CallbackContext become
//     agent.Context (ADK v2's unified context). Both adapters sit at the same
//     depth, so relative paths (to docs/, dashboards/, config/testdata/)
//     need no rewrite.
//   - Files named *_adkv1.go (and *_adkv1_test.go) are the ADK v1 halves of a
//     per-line pair: they are not copied. Files named *_adkv2.go begin with
//     "//go:build ignore" (so the ADK v1 module never builds them): that line
//     is dropped.
//   - Markdown (a sample's README) gets the same import path rewrites; other
//     files (templates, testdata, embedded assets) are copied as they are.
//
// adkv2/go.mod, adkv2/go.sum and adkv2/README.md are the ADK v2 adapter's
// own, kept by hand: genadkv2 never writes them. Every other file under
// adkv2/ is removed first, so a file deleted in adkv1/ disappears from adkv2/
// too.
//
// With -check, genadkv2 writes nothing and exits 1 when adkv2/ is stale.
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
	srcDir    = "adkv1"
	outDir    = "adkv2"
	modPath   = "github.com/adkbreaker/adkbreaker"
	adkPath   = "google.golang.org/adk"
	ignoreTag = "//go:build ignore"
)

// kept are the ADK v2 adapter's own files: genadkv2 neither writes nor
// removes them.
var kept = map[string]bool{"go.mod": true, "go.sum": true, "README.md": true}

func main() {
	check := flag.Bool("check", false, "report whether adkv2/ is stale; write nothing")
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
			fmt.Fprintf(os.Stderr, "genadkv2: %s is stale (run go generate ./...): %s\n", outDir, strings.Join(stale, ", "))
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
	fmt.Fprintln(os.Stderr, "genadkv2:", err)
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

// generate returns the files adkv2/ should hold, by slash path relative to
// adkv2/ (and to adkv1/, which it mirrors).
func generate(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	skip := gitIgnored(root)
	src := filepath.Join(root, srcDir)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if kept[rel] || !d.Type().IsRegular() || skip[srcDir+"/"+rel] {
			return nil // the adapter's own go.mod, go.sum and README; what git ignores (test binaries, profiles)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(rel, ".md"):
			out[rel] = []byte(rewritePaths(string(b)))
		case strings.HasSuffix(rel, ".go"):
			base := strings.TrimSuffix(strings.TrimSuffix(d.Name(), ".go"), "_test")
			if strings.HasSuffix(base, "_adkv1") {
				return nil
			}
			g, err := rewrite(rel, b, strings.HasSuffix(base, "_adkv2"))
			if err != nil {
				return fmt.Errorf("%s/%s: %w", srcDir, rel, err)
			}
			out[rel] = g
		default:
			out[rel] = b
		}
		return nil
	})
	return out, err
}

// ctxTypes are ADK v1's two context types; ADK v2 has one.
var ctxTypes = regexp.MustCompile(`\bagent\.(ToolContext|CallbackContext)\b`)

// rewrite turns one Go file of adkv1/ into its adkv2/ form.
func rewrite(rel string, src []byte, v2only bool) ([]byte, error) {
	s := string(src)
	if v2only {
		first, rest, _ := strings.Cut(s, "\n")
		if strings.TrimSpace(first) != ignoreTag {
			return nil, fmt.Errorf("an _adkv2 file must begin with %q", ignoreTag)
		}
		s = strings.TrimLeft(rest, "\n")
	} else {
		s = toV2(s)
		s = ctxTypes.ReplaceAllString(s, "agent.Context")
	}
	s = toAdapter(s)
	header := "// Code generated by internal/cmd/genadkv2 from " + srcDir + "/" + rel + "; DO NOT EDIT.\n\n"
	b, err := format.Source([]byte(header + s))
	if err != nil {
		return nil, fmt.Errorf("gofmt after rewriting: %w", err)
	}
	return b, nil
}

// rewritePaths applies the import path rewrites to text (Markdown).
func rewritePaths(s string) string { return toAdapter(toV2(s)) }

// toV2 rewrites every ADK package path (in imports, comments and strings)
// to its ADK v2 path, leaving paths already on v2. A module version
// ("google.golang.org/adk v1.7.0") is not a package path.
func toV2(s string) string {
	const prefix = adkPath + "/"
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
		if !strings.HasPrefix(rest, "v2/") {
			b.WriteString("v2/")
		}
		s = rest
	}
}

// adapterPath matches the ADK v1 adapter's module path, alone or as the
// prefix of a package path.
var adapterPath = regexp.MustCompile(regexp.QuoteMeta(modPath+"/"+srcDir) + `\b`)

// toAdapter rewrites the ADK v1 adapter's paths to the ADK v2 adapter's.
func toAdapter(s string) string { return adapterPath.ReplaceAllString(s, modPath+"/"+outDir) }

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

// current returns the files under dir that genadkv2 owns.
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
