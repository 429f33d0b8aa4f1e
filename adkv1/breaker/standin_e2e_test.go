package breaker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
)

// deferringTool is a function tool that may defer its response (ADK v2's
// toolinternal.ResponseDeferrer, as its task agent tool does): it returns
// no result, and ADK v2 then emits no function response for the call.
type deferringTool struct {
	defers bool
	ran    int
}

func (t *deferringTool) Name() string        { return "delegate" }
func (t *deferringTool) Description() string { return "hands the task on" }
func (t *deferringTool) IsLongRunning() bool { return false }
func (t *deferringTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "delegate", Description: "hands the task on"}
}
func (t *deferringTool) Run(agent.ToolContext, any) (map[string]any, error) {
	t.ran++
	return nil, nil
}
func (t *deferringTool) DefersResponse() bool { return t.defers }

// ProcessRequest declares the tool, as ADK's own tools do.
func (t *deferringTool) ProcessRequest(_ agent.ToolContext, req *model.LLMRequest) error {
	if req.Tools == nil {
		req.Tools = map[string]any{}
	}
	req.Tools[t.Name()] = t
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{t.Declaration()}})
	return nil
}

// eventShapes runs one turn of an agent whose model calls the tool once and
// then answers, with plugins ps, and returns each event's shape.
func eventShapes(t *testing.T, tl tool.Tool, ps ...*adkplugin.Plugin) []string {
	t.Helper()
	llm := scripted.New("s", func(req *model.LLMRequest) *model.LLMResponse {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					return scripted.Text("done")
				}
			}
		}
		return scripted.CallTools(scripted.Call{Name: "delegate", Args: map[string]any{"request": "x"}})
	})
	a, err := llmagent.New(llmagent.Config{Name: "boss", Model: llm, Tools: []tool.Tool{tl}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "d", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: ps}})
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if ev.Partial || ev.Content == nil {
			continue
		}
		var kinds []string
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				kinds = append(kinds, "call "+p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				kinds = append(kinds, fmt.Sprintf("response %s %v", p.FunctionResponse.Name, p.FunctionResponse.Response))
			case p.Text != "":
				kinds = append(kinds, "text "+p.Text)
			}
		}
		shapes = append(shapes, ev.Author+": "+strings.Join(kinds, ", "))
	}
	return shapes
}

// TestDeferringToolSameEventsWithPlugin: a tool that defers its response
// (ADK v2 asks DefersResponse of the tool a call ran) gives the same events
// with the plugin (default options: the plugin runs it as a GuardedTool) as
// without. Before GuardedTool forwarded DefersResponse, ADK v2 emitted an
// extra, empty function response for it ("got 3 events, want 2" in ADK's
// own TestHandleFunctionCalls_FRSkipGates with the plugin on every runner),
// and a task agent delegating to a task sub-agent received {}. On ADK v1,
// which does not ask, both runs have the response.
func TestDeferringToolSameEventsWithPlugin(t *testing.T) {
	for _, defers := range []bool{true, false} {
		t.Run(fmt.Sprintf("defers=%v", defers), func(t *testing.T) {
			bare := &deferringTool{defers: defers}
			want := eventShapes(t, bare)
			p, err := breaker.New()
			if err != nil {
				t.Fatal(err)
			}
			guarded := &deferringTool{defers: defers}
			got := eventShapes(t, guarded, p)
			if !slices.Equal(got, want) {
				t.Fatalf("events with the plugin:\n  %s\nwithout:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if bare.ran != 1 || guarded.ran != 1 {
				t.Fatalf("the tool ran %d times without the plugin, %d with it; want once each", bare.ran, guarded.ran)
			}
			t.Logf("events: %q", got)
		})
	}
}
