package callbacks_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	adkmodel "google.golang.org/adk/model"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/registry"
)

// An agent that uses the handler's callbacks directly (no plugin, no
// BeforeModel) guards its tools with Guard, so that the handler knows which
// calls really ran: a call the agent's own permission check refuses is never
// admitted, and never charged to the dependency.
func ExampleHandler_Guard() {
	reg := registry.MustNew()
	h, _ := callbacks.New(callbacks.Config{Registry: reg,
		Mappings: []callbacks.Mapping{{Tools: []string{"get_invoice"}, Dependency: "billing-api"}}})
	getInvoice, _ := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch an invoice."},
		func(agent.ToolContext, struct{}) (map[string]any, error) {
			return map[string]any{"status": "paid"}, nil
		})
	denied := func(agent.ToolContext, tool.Tool, map[string]any) (map[string]any, error) {
		return nil, errors.New("this user may not read invoices")
	}
	model := scripted.New("m", func(req *adkmodel.LLMRequest) *adkmodel.LLMResponse {
		if scripted.LastResponses(req) != nil {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: "get_invoice"})
	}).WithoutLog()
	a, _ := llmagent.New(llmagent.Config{
		Name: "billing", Model: model,
		Tools:                []tool.Tool{h.Guard(getInvoice)},
		BeforeToolCallbacks:  []llmagent.BeforeToolCallback{h.BeforeTool, denied},
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{h.OnToolError},
		AfterToolCallbacks:   []llmagent.AfterToolCallback{h.AfterTool},
	})
	r, _ := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	for range 3 {
		for range r.Run(context.Background(), "user", "s", genai.NewContentFromText("invoice?", genai.RoleUser), agent.RunConfig{}) {
		}
	}
	br, _ := reg.Lookup("billing-api")
	c := br.Counts()
	fmt.Println(br.State(), "failures:", c.Failures, "excluded:", c.Exclusions)
	// Output:
	// closed failures: 0 excluded: 0
}
