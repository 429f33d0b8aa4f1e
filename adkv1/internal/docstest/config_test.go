package docstest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/docscheck"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

const docPath = "../../../docs/configuration.md"

// TestDocsListEveryOption: every exported With… option of package plugin has
// a line in docs/configuration.md.
func TestDocsListEveryOption(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	opts, files := docscheck.Options(t, "../../breaker/*.go")
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
	f, err := config.Parse([]byte(docscheck.Block(t, doc, "mcp.yaml")), config.YAML)
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
	if got, want := fmt.Sprint(err)+"\n", docscheck.Block(t, doc, "mcp.out"); got != want {
		t.Errorf("the error shown in docs/configuration.md is not FromConfig's.\nshown:\n%s\nFromConfig:\n%s", want, got)
	}
	// And the full annotated example, with its variable set.
	t.Setenv("NOTES_MCP_AUTHORIZATION", "Bearer x")
	f, err = config.Parse([]byte(docscheck.Block(t, doc, "example.yaml")), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpguard.ServersFromConfig(f, nil); err != nil {
		t.Errorf("the full example's servers do not build: %v", err)
	}
}
