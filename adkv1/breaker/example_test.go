package breaker_test

import (
	"context"
	"fmt"
	"iter"
	"time"

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
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// oneCall is a stand-in for a model's reasoning: call get_invoice once, then
// answer with what came back.
type oneCall struct{}

func (oneCall) Name() string { return "one-call" }
func (oneCall) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			if p.FunctionResponse != nil {
				info, _ := degrade.Parse(p.FunctionResponse.Response)
				when := fmt.Sprintf("retry in %ds", info.RetryAfterSeconds)
				if info.Reason == degrade.ReasonIsolated {
					when = "no retry time until an operator resets it"
				}
				yield(&model.LLMResponse{Content: genai.NewContentFromText(
					fmt.Sprintf("%s is %s (%s); %s", info.Dependency, p.FunctionResponse.Response["status"], info.Reason, when),
					genai.RoleModel)}, nil)
				return
			}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
			Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_invoice", map[string]any{})}}}, nil)
	}
}

func ExampleNew() {
	// Tools on one backend share one breaker: "billing-api".
	reg := registry.MustNew(registry.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 3, OpenFor: time.Minute, NoJitter: true}))
	p, err := breaker.New(
		breaker.WithRegistry(reg),
		breaker.WithDependency("billing-api", "get_invoice", "list_invoices"),
	)
	if err != nil {
		panic(err)
	}
	getInvoice, _ := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch an invoice."},
		func(agent.ToolContext, struct{}) (map[string]any, error) {
			return map[string]any{"status": "paid"}, nil
		})
	a, _ := llmagent.New(llmagent.Config{Name: "billing", Model: oneCall{}, Tools: []tool.Tool{getInvoice}})
	r, _ := runner.New(runner.Config{
		AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}, // register adkbreaker first
	})

	_ = reg.Isolate("billing-api") // as if the backend had failed three times
	for ev, err := range r.Run(context.Background(), "user", "s1", genai.NewContentFromText("invoice?", genai.RoleUser), agent.RunConfig{}) {
		if err == nil && ev.Content != nil && ev.Content.Parts[0].Text != "" {
			fmt.Println(ev.Content.Parts[0].Text)
		}
	}
	// Output:
	// billing-api is unavailable (isolated); no retry time until an operator resets it
}

// loopModel is a stand-in for a model that never stops calling get_invoice,
// for another invoice each time (or, with same set, for the same one).
type loopModel struct{ same bool }

func (loopModel) Name() string { return "loop" }
func (m loopModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	id := len(req.Contents)
	if m.same {
		id = 7
	}
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
			Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_invoice", map[string]any{"id": id})}}}, nil)
	}
}

// invoiceTool counts its calls in *calls.
func invoiceTool(calls *int) tool.Tool {
	t, _ := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch an invoice."},
		func(agent.ToolContext, struct {
			ID int `json:"id"`
		}) (map[string]any, error) {
			*calls++
			return map[string]any{"status": "paid"}, nil
		})
	return t
}

func ExampleWithRepeatLimit() {
	// The default: the 3rd call of a tool with the same arguments in one
	// turn gets a note instead of running, the 4th ends the turn. A polling
	// tool opts out with WithToolRepeatLimit(name, callbacks.NoRepeatLimit).
	p := breaker.MustNew(breaker.WithRepeatLimit(3))
	calls := 0
	a, _ := llmagent.New(llmagent.Config{Name: "billing", Model: loopModel{same: true}, Tools: []tool.Tool{invoiceTool(&calls)}})
	r, _ := runner.New(runner.Config{
		AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}},
	})
	for ev, err := range r.Run(context.Background(), "user", "s1", genai.NewContentFromText("invoice 7?", genai.RoleUser), agent.RunConfig{}) {
		if err == nil && ev.Content != nil && ev.Content.Parts[0].Text != "" {
			fmt.Println(ev.Content.Parts[0].Text)
		}
	}
	fmt.Println("tool calls:", calls)
	// Output:
	// Sorry, I couldn't complete your request: I kept repeating the same step (get_invoice with the same details) without getting further. Please try again, perhaps rephrasing your request.
	// tool calls: 2
}

func ExampleWithTurnBudget() {
	// At most 3 model calls and 2 minutes per invocation.
	p := breaker.MustNew(breaker.WithTurnBudget(3, 2*time.Minute))
	calls := 0
	a, _ := llmagent.New(llmagent.Config{Name: "billing", Model: loopModel{}, Tools: []tool.Tool{invoiceTool(&calls)}})
	r, _ := runner.New(runner.Config{
		AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}},
	})
	for ev, err := range r.Run(context.Background(), "user", "s1", genai.NewContentFromText("invoice?", genai.RoleUser), agent.RunConfig{}) {
		if err == nil && ev.Content != nil && ev.Content.Parts[0].Text != "" {
			fmt.Println(ev.Content.Parts[0].Text)
		}
	}
	fmt.Println("tool calls:", calls)
	// Output:
	// Sorry, I couldn't complete your request within the steps and time allowed for one answer. Please try again, perhaps with a simpler request.
	// tool calls: 3
}
