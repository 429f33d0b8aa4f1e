package config_test

import (
	"errors"
	"os"
	"testing"

	"github.com/adkbreaker/adkbreaker/internal/docscheck"

	"github.com/adkbreaker/adkbreaker/config"
)

const docPath = "../docs/configuration.md"

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
	if got := docscheck.Block(t, doc, "example.yaml"); got != string(example) {
		t.Errorf("the example in %s differs from testdata/example.yaml; keep them identical", docPath)
	}
	f, err := config.Parse(example, config.YAML)
	if err != nil {
		t.Fatalf("testdata/example.yaml: %v", err)
	}
	if len(f.Dependencies) != 3 || len(f.Models["assistant"].Endpoints) != 2 || len(f.MCPServers) != 1 {
		t.Errorf("example: %d dependencies, %d endpoints, %d MCP servers", len(f.Dependencies), len(f.Models["assistant"].Endpoints), len(f.MCPServers))
	}
	if f, err := config.Parse([]byte(docscheck.Block(t, doc, "mcp.yaml")), config.YAML); err != nil || len(f.MCPServers) != 1 {
		t.Errorf("mcp_servers example in %s: %v", docPath, err)
	}

	if _, err := config.Parse([]byte(docscheck.Block(t, doc, "example.json")), config.JSON); err != nil {
		t.Errorf("JSON example in %s: %v", docPath, err)
	}

	_, err = config.Parse([]byte(docscheck.Block(t, doc, "bad.yaml")), config.YAML)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("invalid example in %s: got %v, want a *config.Error", docPath, err)
	}
	ce.File = "adkbreaker.yaml"
	if got, want := ce.Error()+"\n", docscheck.Block(t, doc, "bad.out"); got != want {
		t.Errorf("the error shown in %s is not what Parse returns.\nshown:\n%s\nParse:\n%s", docPath, want, got)
	}
}
