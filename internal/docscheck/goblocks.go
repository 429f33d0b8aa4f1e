package docscheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GoBlock is one ```go code block of a Markdown file.
//
// Every ```go block of the docs must type-check (CheckGoBlocks). A block is
// either a whole file (it starts with a package clause) or a fragment: its
// imports, if any, then either top-level declarations or statements.
// A fragment is checked as a file of its own, its statements as the body
// of a function returning error (so a fragment may `return err`). In a
// fragment:
//
//   - a package the fragment uses without importing it is imported by the
//     name the docs always give it (AutoImports: breaker is
//     github.com/adkbreaker/adkbreaker/adkv2/breaker, registry, time, …);
//   - an ellipsis "…", and "..." standing for left-out fields at either end
//     of a composite literal ({..., Toolsets: ts} or {Name: n, ...}), are
//     placeholders and are dropped;
//   - variables the fragment uses without declaring them (the agent, a
//     context, a logger) must be declared, with their types, on the line
//     just before the block:
//     <!-- docscheck: given agent agent.Agent; ctx context.Context -->
//     (parameters of the function a fragment's statements are checked in;
//     package-level variables for a fragment of declarations);
//   - variables and imports left unused are fine (a fragment shows a part).
//
// Anything else that does not compile fails the check.
type GoBlock struct {
	File string // the Markdown file, as given to GoBlocks
	Line int    // line of the opening fence
	Src  string
	// Given are the "name Type" declarations of the variables the block
	// uses without declaring them.
	Given []string
}

var (
	fenceOpenRE = regexp.MustCompile("^```go[ \t]*$")
	fenceEndRE  = regexp.MustCompile("^```[ \t]*$")
	givenRE     = regexp.MustCompile(`^<!--\s*docscheck:\s*given\s+([^>]*?)\s*-->\s*$`)
)

// GoBlocks returns the ```go blocks of the Markdown file at path.
func GoBlocks(path string) ([]GoBlock, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []GoBlock
	var cur *GoBlock
	var body strings.Builder
	prev := "" // the last non-blank line before a fence
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && fenceEndRE.MatchString(line):
			cur.Src = body.String()
			out = append(out, *cur)
			cur, prev = nil, line
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case fenceOpenRE.MatchString(line):
			cur = &GoBlock{File: path, Line: n}
			if m := givenRE.FindStringSubmatch(prev); m != nil {
				for _, g := range strings.Split(m[1], ";") {
					if g = strings.TrimSpace(g); g != "" {
						cur.Given = append(cur.Given, g)
					}
				}
			}
			body.Reset()
		case strings.TrimSpace(line) != "":
			prev = line
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unterminated ```go block", path, cur.Line)
	}
	return out, sc.Err()
}

// AutoImports are the import paths of the package names the docs use
// without importing them.
var AutoImports = map[string]string{
	"breaker":    "github.com/adkbreaker/adkbreaker/adkv2/breaker",
	"callbacks":  "github.com/adkbreaker/adkbreaker/adkv2/callbacks",
	"config":     "github.com/adkbreaker/adkbreaker/config",
	"degrade":    "github.com/adkbreaker/adkbreaker/degrade",
	"failover":   "github.com/adkbreaker/adkbreaker/adkv2/failover",
	"fleet":      "github.com/adkbreaker/adkbreaker/fleet",
	"mcpguard":   "github.com/adkbreaker/adkbreaker/adkv2/mcpguard",
	"mcpfault":   "github.com/adkbreaker/adkbreaker/adkv2/mcpguard/mcpfault",
	"promexport": "github.com/adkbreaker/adkbreaker/promexport",
	"redact":     "github.com/adkbreaker/adkbreaker/redact",
	"registry":   "github.com/adkbreaker/adkbreaker/registry",
	"spanredact": "github.com/adkbreaker/adkbreaker/spanredact",
	"statuspage": "github.com/adkbreaker/adkbreaker/statuspage",
	"adkweb":     "github.com/adkbreaker/adkbreaker/adkv2/statuspage/adkweb",

	"agent":     "google.golang.org/adk/v2/agent",
	"llmagent":  "google.golang.org/adk/v2/agent/llmagent",
	"model":     "google.golang.org/adk/v2/model",
	"gemini":    "google.golang.org/adk/v2/model/gemini",
	"plugin":    "google.golang.org/adk/v2/plugin",
	"runner":    "google.golang.org/adk/v2/runner",
	"session":   "google.golang.org/adk/v2/session",
	"tool":      "google.golang.org/adk/v2/tool",
	"universal": "google.golang.org/adk/v2/cmd/launcher/universal",
	"console":   "google.golang.org/adk/v2/cmd/launcher/console",
	"web":       "google.golang.org/adk/v2/cmd/launcher/web",
	"webui":     "google.golang.org/adk/v2/cmd/launcher/web/webui",
	"api":       "google.golang.org/adk/v2/cmd/launcher/web/api",
	"genai":     "google.golang.org/genai",

	"otel":      "go.opentelemetry.io/otel",
	"metric":    "go.opentelemetry.io/otel/metric",
	"trace":     "go.opentelemetry.io/otel/trace",
	"sdktrace":  "go.opentelemetry.io/otel/sdk/trace",
	"sdkmetric": "go.opentelemetry.io/otel/sdk/metric",

	"context": "context",
	"errors":  "errors",
	"fmt":     "fmt",
	"http":    "net/http",
	"log":     "log",
	"os":      "os",
	"slog":    "log/slog",
	"time":    "time",
}

var (
	// placeholders: "…" anywhere, "..." as the first or last element of a
	// composite literal.
	ellipsisRE  = regexp.MustCompile(`…`)
	leadDotsRE  = regexp.MustCompile(`\{[ \t]*\.\.\.[ \t]*,`)
	trailDotsRE = regexp.MustCompile(`,[ \t]*\.\.\.[ \t]*\}`)
	packageRE   = regexp.MustCompile(`(?m)^package\s+\w+`)
)

// source returns the Go file a block is checked as, and how many lines
// that file has before the block's first line and before the block's
// statements (for messages that name the block's own lines).
func (b GoBlock) source() (src string, head, bodyHead int, err error) {
	src = b.Src
	if packageRE.MatchString(src) {
		if len(b.Given) > 0 {
			return "", 0, 0, errors.New("a whole file (with a package clause) cannot be given variables")
		}
		return src, 0, 0, nil
	}
	src = ellipsisRE.ReplaceAllString(src, "")
	src = leadDotsRE.ReplaceAllString(src, "{")
	src = trailDotsRE.ReplaceAllString(src, "}")
	// Declarations alone: a file, the given variables after them.
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package doc\n"+src, parser.SkipObjectResolution); err == nil {
		for _, g := range b.Given {
			src += "var " + g + "\n"
		}
		return "package doc\n" + src, 1, 1, nil
	}
	imports, body := splitImports(src)
	return "package doc\n" + imports + "\nfunc _(" + strings.Join(b.Given, ", ") + ") error {\n" + body + "\nreturn nil\n}\n",
		1, 3, nil
}

// splitImports splits a fragment into its leading import declarations
// (with the comments and blank lines among them) and the rest.
func splitImports(src string) (imports, rest string) {
	lines := strings.SplitAfter(src, "\n")
	i, inParen := 0, false
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case inParen:
			if t == ")" {
				inParen = false
			}
		case t == "" || strings.HasPrefix(t, "//"):
		case strings.HasPrefix(t, "import ("):
			inParen = true
		case strings.HasPrefix(t, "import "):
		default:
			return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
		}
	}
	return src, ""
}

// CheckGoBlocks type-checks blocks against the packages of the module that
// holds dir (a test passes its own directory, ".") and returns one error
// per block that does not compile, naming its file and line. The docs are
// written for the primary line (ADK v2 and adkbreaker's adkv2 packages);
// on is the line they are checked on, and their import paths are mapped to
// it.
//
// On the other line, a block that imports a package outside that module's
// graph (one only ADK v2 has) is not checked there (skipped names it); the
// primary line checks it.
func CheckGoBlocks(dir string, on Line, blocks []GoBlock) (errs []error, skipped []string) {
	type prepared struct {
		b    GoBlock
		fset *token.FileSet
		file *ast.File
		// head and bodyHead are the lines the checked file has before the
		// block's first line and before its statements, which start at
		// the block's line importLines+1.
		head, bodyHead, importLines int
	}
	var ready []prepared
	paths := map[string]bool{}
	for _, b := range blocks {
		src, head, bodyHead, err := b.source()
		if err == nil {
			var f *ast.File
			fset := token.NewFileSet()
			f, err = parser.ParseFile(fset, b.File, src, parser.ParseComments)
			if err == nil {
				addImports(fset, f, on)
				for _, im := range f.Imports {
					p, _ := strconv.Unquote(im.Path.Value)
					paths[p] = true
				}
				ready = append(ready, prepared{b, fset, f, head, bodyHead, strings.Count(b.Src[:len(b.Src)-len(bodyOf(b.Src))], "\n")})
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s:%d: %v", b.File, b.Line, err))
	}
	if len(ready) == 0 {
		return errs, nil
	}
	exports, broken, err := exportData(dir, slices.Sorted(maps.Keys(paths)))
	if err != nil {
		return append(errs, err), nil
	}
	rewritten := on != Primary
	for _, p := range ready {
		if bad := brokenImports(p.file, broken); len(bad) > 0 {
			if rewritten {
				// Checked on the other line: a package outside that
				// module's graph (its go.sum) cannot be loaded there. The
				// primary line checks the block.
				skipped = append(skipped, fmt.Sprintf("%s:%d: imports %s, outside this module's graph", p.b.File, p.b.Line, strings.Join(bad, ", ")))
				continue
			}
			errs = append(errs, fmt.Errorf("the ```go block at %s:%d imports packages that do not load: %s", p.b.File, p.b.Line, strings.Join(bad, "; ")))
			continue
		}
		var problems []string
		conf := types.Config{
			Importer: importer.ForCompiler(p.fset, "gc", func(path string) (io.ReadCloser, error) {
				if e, ok := exports[path]; ok && e != "" {
					return os.Open(e)
				}
				return nil, fmt.Errorf("no export data for %q", path)
			}),
			Error: func(err error) {
				var te types.Error
				if errors.As(err, &te) {
					if te.Soft { // unused variables and imports: a fragment shows a part
						return
					}
					if name, ok := strings.CutPrefix(te.Msg, "undefined: "); ok && slices.Contains(p.b.Given, name) {
						return
					}
					line := te.Fset.Position(te.Pos).Line - p.head
					if line > p.importLines {
						line = te.Fset.Position(te.Pos).Line - p.bodyHead
					}
					problems = append(problems, fmt.Sprintf("%s:%d: %s", p.b.File, p.b.Line+line, te.Msg))
					return
				}
				problems = append(problems, err.Error())
			},
		}
		_, _ = conf.Check("doc", p.fset, []*ast.File{p.file}, nil)
		if len(problems) > 0 {
			errs = append(errs, fmt.Errorf("the ```go block at %s:%d does not compile:\n\t%s", p.b.File, p.b.Line, strings.Join(problems, "\n\t")))
		}
	}
	return errs, skipped
}

// bodyOf returns what follows a fragment's leading imports.
func bodyOf(src string) string {
	_, body := splitImports(src)
	return body
}

// Line names an ADK line by the prefixes of its import paths: ADK's and
// adkbreaker's adapter module for it. The core packages' paths are the same
// on both lines.
type Line struct {
	ADK     string // "google.golang.org/adk/v2/" or "google.golang.org/adk/"
	Adapter string // "github.com/adkbreaker/adkbreaker/adkv2/" or "…/adkv1/"
}

// Primary is the line the docs are written for.
var Primary = Line{ADK: "google.golang.org/adk/v2/", Adapter: "github.com/adkbreaker/adkbreaker/adkv2/"}

// importPath is path, as the docs write it, on line on.
func (on Line) importPath(path string) string {
	for _, r := range [][2]string{{Primary.ADK, on.ADK}, {Primary.Adapter, on.Adapter}} {
		if rest, ok := strings.CutPrefix(path, r[0]); ok {
			return r[1] + rest
		}
	}
	return path
}

// addImports imports, by their AutoImports path, the package names f uses
// as qualifiers (x.Y) without importing them.
func addImports(fset *token.FileSet, f *ast.File, on Line) {
	have := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		im.Path.Value = strconv.Quote(on.importPath(p))
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		have[name] = true
	}
	var add []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && !have[id.Name] {
			if _, known := AutoImports[id.Name]; known {
				have[id.Name] = true
				add = append(add, id.Name)
			}
		}
		return true
	})
	for _, name := range add {
		spec := &ast.ImportSpec{Name: ast.NewIdent(name), Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(on.importPath(AutoImports[name]))}}
		f.Imports = append(f.Imports, spec)
		f.Decls = append([]ast.Decl{&ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{spec}}}, f.Decls...)
	}
}

// brokenImports returns the imports of f that did not load, with why.
func brokenImports(f *ast.File, broken map[string]string) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if why, ok := broken[p]; ok {
			out = append(out, p+" ("+why+")")
		}
	}
	return out
}

// exportData builds (or finds in the build cache) the export data of the
// packages and everything they import, by `go list -e -export -deps`, run
// in dir; broken are the packages that did not load (or depend on one that
// did not), with the first line of why.
func exportData(dir string, paths []string) (exports, broken map[string]string, err error) {
	args := append([]string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{if .Error}}{{.Error}}{{else if .DepsErrors}}a package it imports does not load{{end}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -export: %v\n%s", err, stderr.String())
	}
	exports, broken = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			continue
		}
		exports[f[0]] = f[1]
		if f[2] != "" {
			why, _, _ := strings.Cut(f[2], "\n")
			broken[f[0]] = why
		}
	}
	return exports, broken, nil
}
