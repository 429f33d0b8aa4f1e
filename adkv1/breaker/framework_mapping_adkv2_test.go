//go:build ignore

package breaker_test

import (
	"maps"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	adkplugin "google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv2/breaker"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestFrameworkToolsOnlyByExactName: the tools ADK v2 installs for a
// task-mode or single_turn sub-agent (named after it) and finish_task
// become a dependency only when a mapping names them exactly. A pattern —
// a catch-all "*", "*_task" — never captures one: before, it silently put
// the sub-agent (and finish_task) behind the pattern's breaker again, which
// cuts a single_turn sub-agent at call_timeout and charges it with its
// dependencies' failures.
func TestFrameworkToolsOnlyByExactName(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     llmagent.Mode
		answer   func() *model.LLMResponse
		mappings map[registry.Key][]string
		// want is each breaker's reported outcomes (every call succeeds).
		want map[registry.Key]uint64
	}{
		{name: "single_turn under *", mode: llmagent.ModeSingleTurn,
			mappings: map[registry.Key][]string{"all": {"*"}},
			want:     map[registry.Key]uint64{"all": 1}}, // lookup alone
		{name: "task under *", mode: llmagent.ModeTask, answer: finishTask,
			mappings: map[registry.Key][]string{"all": {"*"}},
			want:     map[registry.Key]uint64{"all": 1}}, // neither worker nor finish_task
		{name: "task under *_task and work*", mode: llmagent.ModeTask, answer: finishTask,
			mappings: map[registry.Key][]string{"crm-api": {"lookup"}, "framework": {"*_task", "work*"}},
			want:     map[registry.Key]uint64{"crm-api": 1}},
		{name: "single_turn named exactly", mode: llmagent.ModeSingleTurn,
			mappings: map[registry.Key][]string{"crm-api": {"lookup"}, "sub": {"worker"}},
			want:     map[registry.Key]uint64{"crm-api": 1, "sub": 1}},
		{name: "finish_task named exactly", mode: llmagent.ModeTask, answer: finishTask,
			mappings: map[registry.Key][]string{"crm-api": {"lookup"}, "end": {"finish_task"}},
			want:     map[registry.Key]uint64{"crm-api": 1, "end": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []breaker.Option{
				breaker.WithClock(registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))),
				breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}),
			}
			for dep, tools := range tc.mappings {
				opts = append(opts, breaker.WithDependency(dep, tools...))
			}
			h, err := breaker.NewHandler(opts...)
			if err != nil {
				t.Fatal(err)
			}
			p, err := breaker.FromHandler(h, "")
			if err != nil {
				t.Fatal(err)
			}
			lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look something up."},
				func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{"answer": "42"}, nil })
			if err != nil {
				t.Fatal(err)
			}
			k := &matrixKit{t: t, guard: "once", obs: &matrixObserver{ended: make(chan struct{})}, lookup: lookup}
			root := delegating(k, "root", modeAgent(k, "worker", tc.mode, k.worker(0, tc.answer), lookup))
			r, err := runner.New(runner.Config{AppName: "framework", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
				PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
				if err != nil {
					t.Fatalf("the run failed: %v", err)
				}
			}
			got := map[registry.Key]uint64{}
			for _, key := range h.Registry().Keys() {
				b, _ := h.Registry().Lookup(key)
				rep := b.Reported()
				got[key] = rep[registry.Success] + rep[registry.Failure] + rep[registry.Excluded]
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("breakers and their reported calls %v, want %v", got, tc.want)
			}
		})
	}
}
