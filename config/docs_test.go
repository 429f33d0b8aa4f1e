package config_test

import (
	"errors"
	"fmt"
	"github.com/adkbreaker/adkbreaker/internal/docscheck"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/mcpguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

const docPath = "../docs/configuration.md"

// docBlock returns the fenced block between "<!-- BEGIN name" and
// "<!-- END name -->" in docs/configuration.md, without its fences.
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	begin := strings.Index(doc, "<!-- BEGIN "+name)
	end := strings.Index(doc, "<!-- END "+name+" -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s: no block %s", docPath, name)
	}
	block := doc[begin:end]
	block = block[strings.Index(block, "\n```")+1:]
	block = block[strings.Index(block, "\n")+1:] // drop the opening fence
	close := strings.LastIndex(block, "```")
	if close < 0 {
		t.Fatalf("%s: block %s is not fenced", docPath, name)
	}
	return block[:close]
}

// TestDocs keeps docs/configuration.md true: its full example is
// testdata/example.yaml (which must parse), its invalid example produces
// exactly the error text shown, its JSON example parses, and it lists every
// plugin option.
func TestDocs(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)

	example := readFile(t, "example.yaml")
	if got := docBlock(t, doc, "example.yaml"); got != string(example) {
		t.Errorf("the example in %s differs from testdata/example.yaml; keep them identical", docPath)
	}
	f, err := config.Parse(example, config.YAML)
	if err != nil {
		t.Fatalf("testdata/example.yaml: %v", err)
	}
	if len(f.Dependencies) != 3 || len(f.Models["assistant"].Endpoints) != 2 || len(f.MCPServers) != 1 {
		t.Errorf("example: %d dependencies, %d endpoints, %d MCP servers", len(f.Dependencies), len(f.Models["assistant"].Endpoints), len(f.MCPServers))
	}
	if f, err := config.Parse([]byte(docBlock(t, doc, "mcp.yaml")), config.YAML); err != nil || len(f.MCPServers) != 1 {
		t.Errorf("mcp_servers example in %s: %v", docPath, err)
	}

	if _, err := config.Parse([]byte(docBlock(t, doc, "example.json")), config.JSON); err != nil {
		t.Errorf("JSON example in %s: %v", docPath, err)
	}

	_, err = config.Parse([]byte(docBlock(t, doc, "bad.yaml")), config.YAML)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("invalid example in %s: got %v, want a *config.Error", docPath, err)
	}
	ce.File = "adkbreaker.yaml"
	if got, want := ce.Error()+"\n", docBlock(t, doc, "bad.out"); got != want {
		t.Errorf("the error shown in %s is not what Parse returns.\nshown:\n%s\nParse:\n%s", docPath, want, got)
	}
}

// TestDocsListEveryOption: every exported With… option of package plugin has
// a line in docs/configuration.md.
func TestDocsListEveryOption(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	opts, files := docscheck.Options(t, "../plugin/*.go")
	n := len(opts)
	for i, o := range opts {
		if !strings.Contains(string(b), "| `"+o+"(") {
			t.Errorf("plugin option %s (%s) is missing from the options table of %s", o, files[i], docPath)
		}
	}
	if n == 0 {
		t.Error("found no plugin options")
	}
}

// TestDocsMCP keeps the mcp_servers section of docs/configuration.md
// true for mcpguard: its example builds a server, and the error it shows is
// the one FromConfig returns.
func TestDocsMCP(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	f, err := config.Parse([]byte(docBlock(t, doc, "mcp.yaml")), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTES_MCP_AUTHORIZATION", "Bearer x")
	if _, err := mcpguard.FromConfig(registry.MustNew(f.RegistryOptions()...), f); err != nil {
		t.Errorf("the example does not build: %v", err)
	}
	t.Setenv("NOTES_MCP_AUTHORIZATION", "")
	n := f.MCPServers["notes"]
	n.Retry.Base, n.Retry.Cap = config.Duration(2*time.Second), config.Duration(time.Second)
	f.MCPServers["notes"] = n
	_, err = mcpguard.FromConfig(registry.MustNew(f.RegistryOptions()...), f)
	if got, want := fmt.Sprint(err)+"\n", docBlock(t, doc, "mcp.out"); got != want {
		t.Errorf("the error shown in docs/configuration.md is not FromConfig's.\nshown:\n%s\nFromConfig:\n%s", want, got)
	}
	// And the full annotated example, with its variable set.
	t.Setenv("NOTES_MCP_AUTHORIZATION", "Bearer x")
	f, err = config.Parse([]byte(docBlock(t, doc, "example.yaml")), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpguard.ServersFromConfig(f, nil); err != nil {
		t.Errorf("the full example's servers do not build: %v", err)
	}
}
