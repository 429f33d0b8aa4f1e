package callbacks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/agenttool"
	"google.golang.org/genai"
)

// Stand-ins: GuardedTool and AgentTool stand in for a tool, the toolset of
// Handler.GuardToolset for a toolset. ADK decides what to do with a tool or
// a toolset by asking it for optional interfaces; a stand-in that does not
// carry one changes ADK's behaviour silently (ADK v2 emitted an extra
// function response for a deferring tool behind a GuardedTool).
//
// standinInterfaces is the maintained list of every interface ADK (both
// lines) type-asserts in its sources, keyed by the sorted names of the
// interface's methods. TestStandInsForwardADKInterfaces scans the sources of
// the ADK version in go.mod and fails on an assertion whose interface is
// not listed: the next ADK release that asks a tool something new is
// caught here, not by users.
type standinKind int

const (
	onTools      standinKind = 1 << iota // the tool stand-ins must implement it
	onToolsets                           // the toolset stand-in must implement it
	neverWrapped                         // asked of tools the stand-ins never wrap
)

type standinInterface struct {
	kind  standinKind
	iface reflect.Type // for onTools/onToolsets: the interface the stand-in must implement
	why   string
}

func ifaceOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

var standinInterfaces = map[string]standinInterface{
	// A name (ADK's agent graph generator names tools and agents).
	"Name": {kind: onTools | onToolsets, iface: ifaceOf[interface{ Name() string }](), why: "a named instance"},
	// tool.Tool itself (a value of req.Tools checked to be a tool).
	"Description+IsLongRunning+Name": {kind: onTools, iface: ifaceOf[tool.Tool](), why: "tool.Tool"},
	// toolinternal.FunctionTool: what the flow runs.
	"Declaration+Description+IsLongRunning+Name+Run": {kind: onTools, iface: ifaceOf[runnableTool](), why: "toolinternal.FunctionTool"},
	// toolinternal.RequestProcessor, asked of tools and of toolsets (ADK v2's
	// skill toolset has one), and by ADK's confirmation wrapper of its tool.
	"ProcessRequest": {kind: onTools | onToolsets, iface: ifaceOf[interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	}](), why: "toolinternal.RequestProcessor"},
	// ADK v2's workflow tool node runs a tool that has Run.
	"Run": {kind: onTools, iface: ifaceOf[interface {
		Run(agent.ToolContext, any) (map[string]any, error)
	}](), why: "a tool a workflow node runs (ADK v2)"},
	// ADK v1's toolinternal.SkipSummarizationResultDisplayer (agent tool).
	"DisplayResultOnSkipSummarization": {kind: onTools, iface: ifaceOf[interface{ DisplayResultOnSkipSummarization() bool }](),
		why: "toolinternal.SkipSummarizationResultDisplayer (ADK v1)"},
	// ADK v2's toolinternal.ResponseDeferrer (task agent tool).
	"DefersResponse": {kind: onTools, iface: ifaceOf[interface{ DefersResponse() bool }](),
		why: "toolinternal.ResponseDeferrer (ADK v2)"},
	// toolinternal.StreamingFunctionTool: Guard leaves streaming tools as
	// they are (they run with no tool callbacks at all).
	"Declaration+Description+IsLongRunning+Name+RunStream": {kind: neverWrapped, why: "toolinternal.StreamingFunctionTool: Guard does not wrap streaming tools"},
}

// concreteToolAssertions are ADK's assertions to a concrete tool type, which
// no stand-in can satisfy; each is listed with why it does not see a
// stand-in. A new one fails the test.
var concreteToolAssertions = map[string]string{
	"*workflowinternal.TaskAgentTool":  "ADK v2 reads it from the agent's configured tools (safeCanonicalToolsDict), never from the request the plugin rewrites",
	"*workflowinternal.FinishTaskTool": "ADK v2 reads it from the agent's configured tools, never from the request the plugin rewrites",
}

// adkAssertion is one type assertion (or type-switch case) in ADK's sources.
type adkAssertion struct {
	pos     string // file:line, relative to the module
	expr    string // what is asserted
	typ     string // the asserted type as written
	methods []string
	// concrete is set when the type is not an interface of the module.
	concrete bool
}

// adkModule returns the import path and the directory of the ADK module
// this package is built with (google.golang.org/adk, or .../adk/v2 on the
// ADK v2 line).
func adkModule(t *testing.T) (path, dir string) {
	t.Helper()
	path = strings.TrimSuffix(reflect.TypeFor[tool.Tool]().PkgPath(), "/tool")
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	dir = strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatalf("go list -m %s: no directory (run go mod download)", path)
	}
	return path, dir
}

// scanADKAssertions parses every non-test Go file of the ADK module in dir
// and returns its type assertions to interfaces, with their method sets
// (embedded interfaces of the module expanded), and to concrete types
// whose name says they are tools.
func scanADKAssertions(t *testing.T, modPath, dir string) []adkAssertion {
	t.Helper()
	fset := token.NewFileSet()
	type pkgFile struct {
		f       *ast.File
		rel     string
		pkgPath string
		imports map[string]string
	}
	var files []pkgFile
	// interfaces[pkgPath][name]
	type ifaceDecl struct {
		it      *ast.InterfaceType
		imports map[string]string // of the file that declares it
	}
	interfaces := map[string]map[string]ifaceDecl{}
	// methods["pkgPath.Type"]: the methods declared on each type.
	methods := map[string]map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != dir && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		pkgPath := modPath
		if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
			pkgPath += "/" + d
		}
		imports := fileImports(f)
		files = append(files, pkgFile{f, filepath.ToSlash(rel), pkgPath, imports})
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				recv := fd.Recv.List[0].Type
				if st, ok := recv.(*ast.StarExpr); ok {
					recv = st.X
				}
				switch r := recv.(type) {
				case *ast.IndexExpr:
					recv = r.X
				case *ast.IndexListExpr:
					recv = r.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					k := pkgPath + "." + id.Name
					if methods[k] == nil {
						methods[k] = map[string]bool{}
					}
					methods[k][fd.Name.Name] = true
				}
				continue
			}
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					if interfaces[pkgPath] == nil {
						interfaces[pkgPath] = map[string]ifaceDecl{}
					}
					interfaces[pkgPath][ts.Name.Name] = ifaceDecl{it, imports}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scanning %s: %v", dir, err)
	}
	if len(files) < 50 {
		t.Fatalf("scanning %s: only %d Go files; is this the ADK module?", dir, len(files))
	}

	// What ADK's own tools and toolsets answer: the types with the methods
	// of tool.Tool or tool.Toolset, and every method they declare. An
	// interface is asked of tools when each of its methods is one of these.
	toolTypes := map[string]bool{} // type name (without package)
	toolMethods := map[string]bool{}
	for k, ms := range methods {
		isTool := ms["Name"] && ms["IsLongRunning"] && ms["Description"]
		isToolset := ms["Name"] && ms["Tools"]
		if !isTool && !isToolset {
			continue
		}
		toolTypes[k[strings.LastIndex(k, ".")+1:]] = true
		for m := range ms {
			toolMethods[m] = true
		}
	}
	if !toolMethods["Run"] || !toolMethods["ProcessRequest"] || !toolMethods["Tools"] {
		t.Fatalf("scanning %s: the tool types' methods %v lack Run, ProcessRequest or Tools", dir, toolMethods)
	}

	var out []adkAssertion
	for _, pf := range files {
		// resolve returns the methods of the interface typ names, in a file
		// of pkgPath with imports (nil, false when it is not an interface
		// of the module or inline).
		var resolve func(pkgPath string, imports map[string]string, typ ast.Expr) ([]string, bool)
		resolveIface := func(pkgPath string, imports map[string]string, it *ast.InterfaceType) ([]string, bool) {
			var ms []string
			for _, m := range it.Methods.List {
				if len(m.Names) > 0 {
					for _, n := range m.Names {
						ms = append(ms, n.Name)
					}
					continue
				}
				emb, ok := resolve(pkgPath, imports, m.Type) // an embedded interface
				if !ok {
					return nil, false
				}
				ms = append(ms, emb...)
			}
			return ms, true
		}
		resolve = func(pkgPath string, imports map[string]string, typ ast.Expr) ([]string, bool) {
			switch x := typ.(type) {
			case *ast.InterfaceType:
				return resolveIface(pkgPath, imports, x)
			case *ast.Ident:
				if x.Name == "error" {
					return []string{"Error"}, true
				}
				if d, ok := interfaces[pkgPath][x.Name]; ok {
					return resolveIface(pkgPath, d.imports, d.it)
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					ip := imports[id.Name]
					if d, ok := interfaces[ip][x.Sel.Name]; ok {
						return resolveIface(ip, d.imports, d.it)
					}
				}
			}
			return nil, false
		}
		add := func(pos token.Pos, x, typ ast.Expr) {
			ms, ok := resolve(pf.pkgPath, pf.imports, typ)
			a := adkAssertion{
				pos:  fmt.Sprintf("%s:%d", pf.rel, fset.Position(pos).Line),
				expr: exprString(x),
				typ:  exprString(typ),
			}
			if ok {
				sort.Strings(ms)
				a.methods = slicesCompact(ms)
				for _, m := range a.methods {
					if !toolMethods[m] {
						return // asked of something other than tools
					}
				}
			} else {
				name := strings.TrimPrefix(a.typ, "*")
				name = name[strings.LastIndex(name, ".")+1:]
				if !toolTypes[name] {
					return // a concrete type that is not a tool
				}
				a.concrete = true
			}
			out = append(out, a)
		}
		ast.Inspect(pf.f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.TypeAssertExpr:
				if x.Type != nil {
					add(x.Pos(), x.X, x.Type)
				}
			case *ast.TypeSwitchStmt:
				var subject ast.Expr
				switch s := x.Assign.(type) {
				case *ast.AssignStmt:
					subject = s.Rhs[0].(*ast.TypeAssertExpr).X
				case *ast.ExprStmt:
					subject = s.X.(*ast.TypeAssertExpr).X
				}
				for _, c := range x.Body.List {
					for _, typ := range c.(*ast.CaseClause).List {
						if id, ok := typ.(*ast.Ident); ok && id.Name == "nil" {
							continue
						}
						add(typ.Pos(), subject, typ)
					}
				}
			}
			return true
		})
	}
	return out
}

// fileImports maps the local names of f's imports to their paths.
func fileImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, im := range f.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		name := ip[strings.LastIndex(ip, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = ip
	}
	return imports
}

func slicesCompact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func exprString(x ast.Expr) string {
	switch v := x.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		return exprString(v.X) + "." + v.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(v.X)
	case *ast.InterfaceType:
		return "interface{...}"
	case *ast.IndexExpr:
		return exprString(v.X) + "[" + exprString(v.Index) + "]"
	case *ast.CallExpr:
		return exprString(v.Fun) + "(...)"
	case *ast.ArrayType:
		return "[]" + exprString(v.Elt)
	case *ast.MapType:
		return "map[" + exprString(v.Key) + "]" + exprString(v.Value)
	case *ast.ParenExpr:
		return "(" + exprString(v.X) + ")"
	}
	return fmt.Sprintf("%T", x)
}

// TestStandInsForwardADKInterfaces scans the ADK sources of the version in
// go.mod for every interface ADK asks of a value, and fails when one is not
// in standinInterfaces, or is listed for tools or toolsets and a stand-in
// does not implement it.
func TestStandInsForwardADKInterfaces(t *testing.T) {
	modPath, dir := adkModule(t)
	as := scanADKAssertions(t, modPath, dir)
	t.Logf("%s: %d type assertions to interfaces or tool types", dir, len(as))

	tools := map[string]reflect.Type{
		"GuardedTool": reflect.TypeFor[*GuardedTool](),
		"AgentTool":   reflect.TypeFor[*AgentTool](),
	}
	toolsets := map[string]reflect.Type{
		"guardedToolset": reflect.TypeFor[*guardedToolset](),
	}
	seen := map[string]bool{}
	for _, a := range as {
		if a.concrete {
			if why, ok := concreteToolAssertions[a.typ]; ok {
				t.Logf("%s: %s.(%s): %s", a.pos, a.expr, a.typ, why)
			} else {
				t.Errorf("%s: ADK asserts %s to the concrete tool type %s, which no stand-in can be: "+
					"check whether it can see a GuardedTool or an AgentTool and list it in concreteToolAssertions", a.pos, a.expr, a.typ)
			}
			continue
		}
		key := strings.Join(a.methods, "+")
		si, ok := standinInterfaces[key]
		if !ok {
			t.Errorf("%s: ADK asserts %s to %s {%s}, an interface not in standinInterfaces: "+
				"decide whether the tool or toolset stand-ins must forward it", a.pos, a.expr, a.typ, key)
			continue
		}
		seen[key] = true
		t.Logf("%s: %s.(%s) {%s}: %s", a.pos, a.expr, a.typ, key, si.why)
		check := func(kinds map[string]reflect.Type) {
			for name, st := range kinds {
				if !st.Implements(si.iface) {
					t.Errorf("%s: ADK asserts %s to %s (%s); %s does not implement it", a.pos, a.expr, a.typ, si.why, name)
				}
			}
		}
		if si.kind&onTools != 0 {
			check(tools)
		}
		if si.kind&onToolsets != 0 {
			check(toolsets)
		}
	}
	// The scan must find what is known to be there on both lines, or it
	// has gone blind.
	for _, key := range []string{"ProcessRequest", "Declaration+Description+IsLongRunning+Name+Run"} {
		if !seen[key] {
			t.Errorf("the scan found no assertion to {%s}: it no longer sees ADK's flow", key)
		}
	}
}

// optionalTool is a function tool with every optional method ADK asks of a
// tool, answering what a default would not.
type optionalTool struct {
	scriptTool
	processed int
}

func (t *optionalTool) DefersResponse() bool                   { return true }
func (t *optionalTool) DisplayResultOnSkipSummarization() bool { return true }
func (t *optionalTool) ProcessRequest(_ agent.ToolContext, req *model.LLMRequest) error {
	t.processed++
	return packTool(req, t)
}

// optionalToolset is a toolset with a ProcessRequest of its own.
type optionalToolset struct {
	tool.Toolset
	processed int
}

func (s *optionalToolset) ProcessRequest(agent.ToolContext, *model.LLMRequest) error {
	s.processed++
	return nil
}

// TestStandInsForwardOptionalMethods: each optional method answers what the
// wrapped tool or toolset answers (not merely exists), and the default
// when it has no such method.
func TestStandInsForwardOptionalMethods(t *testing.T) {
	h := newGuardHandler(t, nil)
	sub, err := llmagent.New(llmagent.Config{Name: "sub", Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	inner := &optionalTool{}
	standins := map[string]tool.Tool{
		"GuardedTool": h.Guard(inner),
		"AgentTool":   &AgentTool{inner: inner, agent: sub, h: h},
	}
	for name, st := range standins {
		if d, ok := st.(interface{ DefersResponse() bool }); !ok || !d.DefersResponse() {
			t.Errorf("%s does not answer DefersResponse() = true as the tool does", name)
		}
		if d, ok := st.(interface{ DisplayResultOnSkipSummarization() bool }); !ok || !d.DisplayResultOnSkipSummarization() {
			t.Errorf("%s does not answer DisplayResultOnSkipSummarization() = true as the tool does", name)
		}
	}
	before := inner.processed
	if err := standins["GuardedTool"].(interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	}).ProcessRequest(nil, &model.LLMRequest{}); err != nil || inner.processed != before+1 {
		t.Errorf("GuardedTool.ProcessRequest: err %v, the tool's ran %d times, want once", err, inner.processed-before)
	}

	plain := &scriptTool{}
	adkAgentTool := h.agentToolFor(agenttool.New(sub, nil))
	if adkAgentTool == nil {
		t.Fatal("no AgentTool for ADK's agent tool")
	}
	for name, st := range map[string]tool.Tool{"GuardedTool": h.Guard(plain), "AgentTool": adkAgentTool} {
		if d, ok := st.(interface{ DefersResponse() bool }); ok && d.DefersResponse() {
			t.Errorf("%s.DefersResponse() = true for a tool without the method", name)
		}
	}

	ts := &optionalToolset{}
	gts := h.GuardToolset(ts)
	rp, ok := gts.(interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	})
	if !ok {
		t.Fatal("the guarded toolset has no ProcessRequest")
	}
	if err := rp.ProcessRequest(nil, &model.LLMRequest{}); err != nil || ts.processed != 1 {
		t.Errorf("guarded toolset ProcessRequest: err %v, the toolset's ran %d times, want once", err, ts.processed)
	}
	if err := h.GuardToolset(&optionalToolset{}).(interface {
		ProcessRequest(agent.ToolContext, *model.LLMRequest) error
	}).ProcessRequest(nil, &model.LLMRequest{Config: &genai.GenerateContentConfig{}}); err != nil {
		t.Errorf("ProcessRequest of a toolset: %v", err)
	}
}
