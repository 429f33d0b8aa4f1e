//go:build ignore

package mcpguard_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/workflow"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// TestSpansInsideAGraphWorkflow: ADK v2's graph workflow agents record an
// "invoke_workflow {name}" span where other agents have "invoke_agent".
// MCP tracing nests under it as under an agent span: discovery in the
// workflow's trace below it, the call a child of ADK's execute_tool span.
func TestSpansInsideAGraphWorkflow(t *testing.T) {
	ctx, rec := tracedContext(t)
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "notes", Dial: fs.Dial, OperationBudget: 20 * time.Second}})
	defer g.Close()
	p, err := breaker.New(breaker.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "agent", Model: &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}},
		Toolsets: []tool.Toolset{g.Toolset()}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := workflow.NewAgentNode(a, workflow.NodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflowagent.New(workflowagent.Config{Name: "wf", Edges: workflow.Chain(workflow.Start, node)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: wf, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for ev, err := range r.Run(ctx, "user", "session", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range ev.Content.Parts {
			if fr := part.FunctionResponse; fr != nil && fr.Response[mcpguard.KeyOutput] == "hi" {
				answered = true
			}
		}
	}
	if !answered {
		t.Fatal("the MCP tool did not answer inside the workflow")
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	under := func(s sdktrace.ReadOnlySpan, name string) bool {
		for s != nil {
			if s.Name() == name {
				return true
			}
			s = byID[s.Parent().SpanID()]
		}
		return false
	}
	wfSpan := oneSpan(t, rec, "invoke_workflow wf")
	call := oneSpan(t, rec, "mcp.notes.call_tool")
	exec := oneSpan(t, rec, "execute_tool echo")
	if call.Parent().SpanID() != exec.SpanContext().SpanID() {
		t.Errorf("call span's parent = %v, want ADK's execute_tool span", call.Parent().SpanID())
	}
	if !under(call, wfSpan.Name()) {
		t.Error("the MCP call span is not below the workflow's span")
	}
	lists := spansNamed(rec, "mcp.notes.list_tools")
	if len(lists) == 0 || !under(lists[0], wfSpan.Name()) {
		t.Errorf("discovery spans %d, want them below the workflow's span", len(lists))
	}
}
