package breaker_test

import (
	"context"
	"strconv"
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
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
)

// turnRunner is one agent whose scripted model calls a no-op tool once and
// then answers: the shape of the cheapest real turn.
func turnRunner(b *testing.B, plugins ...*adkplugin.Plugin) (*runner.Runner, session.Service) {
	b.Helper()
	noop, err := functiontool.New(functiontool.Config{Name: "noop", Description: "does nothing"},
		func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil })
	if err != nil {
		b.Fatal(err)
	}
	llm := scripted.New("scripted", func(req *model.LLMRequest) *model.LLMResponse {
		if scripted.LastResponses(req) != nil {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: "noop"})
	}).WithoutLog()
	a, err := llmagent.New(llmagent.Config{Name: "bench", Model: llm, Tools: []tool.Tool{noop}})
	if err != nil {
		b.Fatal(err)
	}
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "bench", Agent: a, SessionService: svc,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		b.Fatal(err)
	}
	return r, svc
}

// BenchmarkTurn is a full ADK turn (session create, model → tool → model,
// session delete) without the plugin (the baseline) and with it, in one run.
func BenchmarkTurn(b *testing.B) {
	for _, tc := range []struct {
		name    string
		plugins func(b *testing.B) []*adkplugin.Plugin
	}{
		{"none", func(*testing.B) []*adkplugin.Plugin { return nil }},
		{"adkbreaker", func(b *testing.B) []*adkplugin.Plugin {
			p, err := breaker.New()
			if err != nil {
				b.Fatal(err)
			}
			return []*adkplugin.Plugin{p}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r, svc := turnRunner(b, tc.plugins(b)...)
			msg := genai.NewContentFromText("go", genai.RoleUser)
			ctx := context.Background()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				sid := "s" + strconv.Itoa(i)
				i++
				if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: sid}); err != nil {
					b.Fatal(err)
				}
				events := 0
				for _, err := range r.Run(ctx, "u", sid, msg, agent.RunConfig{}) {
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
				if events != 3 {
					b.Fatalf("turn produced %d events, want 3", events)
				}
				if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "bench", UserID: "u", SessionID: sid}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
