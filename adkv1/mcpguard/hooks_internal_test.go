package mcpguard

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// sdkAssertion is an optional interface the go-sdk type-asserts on a
// connection or transport.
type sdkAssertion struct {
	iface  string   // the asserted interface
	on     string   // Connection or Transport
	file   string   // where
	extra  []string // its methods beyond the asserted-on interface
	impls  []string // the go-sdk's types implementing it ("*mcp.x")
	server bool     // asserted on the server's side only (server*.go)
}

// scanSDKAssertions reads the mcp package of the go-sdk version this module
// requires (go.mod, from the module cache) and type-checks it (imports are
// stubbed: only the package's own types matter), returning every type
// assertion on a value of static type mcp.Connection or mcp.Transport.
func scanSDKAssertions(t *testing.T) (version string, out []sdkAssertion) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/modelcontextprotocol/go-sdk")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m go-sdk: %v", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if dir == "" {
		t.Fatalf("go-sdk %s is not in the module cache (go mod download)", version)
	}
	pkgDir := filepath.Join(dir, "mcp")
	fset := token.NewFileSet()
	ents, err := os.ReadDir(pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(pkgDir, name); err != nil || !ok {
			continue // excluded by its build constraints here
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "mcp" {
			files = append(files, f)
		}
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: stubImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/modelcontextprotocol/go-sdk/mcp", fset, files, info)
	conn := pkg.Scope().Lookup("Connection").Type()
	transport := pkg.Scope().Lookup("Transport").Type()
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil {
				return true
			}
			xt := info.Types[ta.X].Type
			var on types.Type
			switch {
			case xt != nil && types.Identical(xt, conn):
				on = conn
			case xt != nil && types.Identical(xt, transport):
				on = transport
			default:
				return true
			}
			tt, ok := info.Types[ta.Type].Type.(*types.Named)
			if !ok {
				return true
			}
			it, ok := tt.Underlying().(*types.Interface)
			if !ok {
				return true
			}
			key := tt.Obj().Name() + "@" + name
			if seen[key] {
				return true
			}
			seen[key] = true
			a := sdkAssertion{iface: tt.Obj().Name(), on: on.(*types.Named).Obj().Name(), file: name,
				server: strings.HasPrefix(name, "server")}
			base := on.Underlying().(*types.Interface)
			for i := 0; i < it.NumMethods(); i++ {
				m := it.Method(i)
				if obj, _, _ := types.LookupFieldOrMethod(base, false, nil, m.Name()); obj == nil {
					a.extra = append(a.extra, m.Name())
				}
			}
			for _, n := range pkg.Scope().Names() {
				tn, ok := pkg.Scope().Lookup(n).(*types.TypeName)
				if !ok || types.IsInterface(tn.Type()) {
					continue
				}
				// A type with a stubbed (invalid) embedded field satisfies
				// any interface for go/types: require the hook's methods
				// to be the type's own.
				own := true
				for _, m := range a.extra {
					obj, _, _ := types.LookupFieldOrMethod(tn.Type(), true, pkg, m)
					if _, ok := obj.(*types.Func); !ok {
						own = false
					}
				}
				switch {
				case !own:
				case types.Implements(tn.Type(), it):
					a.impls = append(a.impls, "mcp."+n)
				case types.Implements(types.NewPointer(tn.Type()), it):
					a.impls = append(a.impls, "*mcp."+n)
				}
			}
			out = append(out, a)
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].iface+out[i].file < out[j].iface+out[j].file })
	return version, out
}

type stubImporter struct{}

func (stubImporter) Import(p string) (*types.Package, error) {
	name := path.Base(p)
	if strings.HasPrefix(name, "v") && len(name) <= 3 { // .../v3
		name = path.Base(path.Dir(p))
	}
	pkg := types.NewPackage(p, name)
	pkg.MarkComplete()
	return pkg, nil
}

// serverSideHidden are interfaces the go-sdk asserts on a server's
// connection that mcpfault's in-process fault server (which wraps the
// server's io connection) hides, with why that is acceptable. mcpguard
// itself wraps no server connection; mcpfault's HTTP mode serves the
// go-sdk's own connections.
var serverSideHidden = map[string]string{
	"serverConnection": "ioConn.sessionUpdated records the negotiated version only to refuse JSON-RPC batches on protocols that drop them; the fault server's clients send none",
}

// TestConnectionHooksForwarded enumerates the optional interfaces the
// go-sdk of go.mod type-asserts on a connection or transport, and fails
// when one appears that mcpguard's stand-ins do not carry: an interface
// asserted on the client's side must either have only exported methods
// that guardConn forwards, or be implemented only by go-sdk connections
// that mcpguard hands to the go-sdk unwrapped (hookedConns, guarded at
// their HTTP requests instead). A hidden hook is how the
// MCP-Protocol-Version header, the standalone SSE stream and
// tools/list_changed over HTTP were lost.
func TestConnectionHooksForwarded(t *testing.T) {
	version, as := scanSDKAssertions(t)
	if len(as) == 0 {
		t.Fatalf("go-sdk %s: no type assertion on a connection found; the scan is broken", version)
	}
	names := map[string]bool{}
	gcType := reflect.TypeOf(&guardConn{})
	for _, a := range as {
		names[a.iface] = true
		t.Logf("go-sdk %s: %s.(%s) in %s; methods %v; implemented by %v", version, a.on, a.iface, a.file, a.extra, a.impls)
		if a.server {
			if a.on == "Connection" {
				if _, ok := serverSideHidden[a.iface]; !ok && hasUnexported(a.extra) {
					t.Errorf("go-sdk %s asserts %s (unexported hook) on a server connection in %s: mcpfault's in-process server hides it; forward it or list it in serverSideHidden with the reason", version, a.iface, a.file)
				}
			}
			continue
		}
		if a.on == "Transport" {
			t.Errorf("go-sdk %s asserts %s on a client transport in %s: guardTransport hides it; forward it", version, a.iface, a.file)
			continue
		}
		if !hasUnexported(a.extra) {
			for _, m := range a.extra {
				if _, ok := gcType.MethodByName(m); !ok {
					t.Errorf("go-sdk %s asserts %s on a connection (%s); guardConn does not forward %s", version, a.iface, a.file, m)
				}
			}
			continue
		}
		for _, impl := range a.impls {
			if strings.Contains(strings.ToLower(impl), "server") {
				continue // a server's connection; mcpguard wraps clients' only
			}
			if !hookedConns[impl] {
				t.Errorf("go-sdk %s: %s implements %s (asserted in %s), a hook a wrapper cannot forward; add it to hookedConns and guard it below the connection", version, impl, a.iface, a.file)
			}
		}
	}
	for _, want := range []string{"clientConnection", "hasSessionID"} {
		if !names[want] {
			t.Errorf("go-sdk %s: the scan did not find the known assertion of %s; the scan is broken", version, want)
		}
	}
	// Every hooked connection is real: a stale entry would hide nothing
	// but means the list is no longer checked against the go-sdk.
	for c := range hookedConns {
		found := false
		for _, a := range as {
			for _, impl := range a.impls {
				found = found || impl == c
			}
		}
		if !found {
			t.Errorf("hookedConns lists %s, which implements no hook in go-sdk %s", c, version)
		}
	}
}

func hasUnexported(ms []string) bool {
	for _, m := range ms {
		if !token.IsExported(m) {
			return true
		}
	}
	return false
}
