package breaker_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestToolNoteInEveryRequest: with WithToolNote, every model request of
// several turns in one session declares each protected tool — a function
// tool and the tools of an MCP server, whose declarations are the same
// objects every turn — with the standing sentence exactly once; an
// unprotected tool is left alone, and no tool's own declaration is modified.
func TestToolNoteInEveryRequest(t *testing.T) {
	fs := mcpfault.New(mcpfault.Config{})
	t.Cleanup(func() { _ = fs.Close() })
	reg := registry.MustNew()
	g, err := mcpguard.New(reg, []mcpguard.Server{{Name: "pay", Dial: fs.Dial, Tools: []string{"echo", "charge"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithToolNote(),
		breaker.WithDependency("billing-api", "get_invoice"), breaker.WithUnmappedTools(callbacks.PassThrough))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) tool.Tool {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: "Does " + name + "."},
			func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	llm := scripted.New("scripted", func(req *model.LLMRequest) *model.LLMResponse {
		if scripted.LastResponses(req) != nil {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: "echo", Args: map[string]any{"text": "hi"}}, scripted.Call{Name: "get_invoice"})
	})
	a, err := llmagent.New(llmagent.Config{Name: "agent", Model: llm,
		Tools: []tool.Tool{mk("get_invoice"), mk("local_clock")}, Toolsets: []tool.Toolset{g.Toolset()}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "note", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText(fmt.Sprint("turn ", i), genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	reqs := llm.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model requests, want 6 (two per turn)", len(reqs))
	}
	note := degrade.ToolNote()
	for i, req := range reqs {
		for _, name := range []string{"get_invoice", "echo", "charge"} {
			d, ok := scripted.ToolDescription(req, name)
			if !ok || strings.Count(d, note) != 1 || !strings.HasPrefix(d, strings.TrimSuffix(d, note)) {
				t.Errorf("request %d: %s described as %q, want the note once", i, name, d)
			}
		}
		if d, _ := scripted.ToolDescription(req, "local_clock"); strings.Contains(d, note) {
			t.Errorf("request %d: unprotected local_clock got the note: %q", i, d)
		}
	}
	last := reqs[len(reqs)-1]
	for _, name := range []string{"get_invoice", "echo", "charge"} {
		tl, ok := last.Tools[name].(interface {
			Declaration() *genai.FunctionDeclaration
		})
		if !ok {
			t.Fatalf("request tool %s has no declaration", name)
		}
		if d := tl.Declaration().Description; strings.Contains(d, note) {
			t.Errorf("%s's own declaration was modified: %q", name, d)
		}
	}
}
