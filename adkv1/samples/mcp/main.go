// Command mcp shows MCP servers behind mcpguard on a real ADK runner,
// offline: one required server that works, one optional server that is down,
// and one that flaps. It prints a timeline and a summary line.
//
//	go run ./samples/mcp
package main

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%6.1fms] %s\n", float64(time.Since(start).Microseconds())/1000, fmt.Sprintf(format, args...))
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// Three in-process MCP servers (no sockets).
	notes := mcpfault.New(mcpfault.Config{Name: "notes", Legacy: true})
	weather := mcpfault.New(mcpfault.Config{Name: "weather", Mode: mcpfault.Unreachable})
	payments := mcpfault.New(mcpfault.Config{Name: "payments", Mode: mcpfault.Flapping, FlapEvery: 1})
	defer notes.Close()
	defer weather.Close()
	defer payments.Close()

	limits := mcpguard.Server{
		ConnectTimeout: 500 * time.Millisecond, DiscoveryTimeout: time.Second,
		CallTimeout: time.Second, OperationBudget: 2 * time.Second,
		Retry: mcpguard.Retry{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond},
	}
	server := func(s mcpguard.Server) mcpguard.Server {
		s.ConnectTimeout, s.DiscoveryTimeout, s.CallTimeout, s.OperationBudget, s.Retry =
			limits.ConnectTimeout, limits.DiscoveryTimeout, limits.CallTimeout, limits.OperationBudget, limits.Retry
		return s
	}
	servers := []mcpguard.Server{
		server(mcpguard.Server{Name: "notes", Required: true, Dial: notes.Dial, ToolPrefix: "notes_", Tools: []string{"echo"}}),
		server(mcpguard.Server{Name: "weather", Capability: "weather forecasts", Dial: weather.Dial, ToolPrefix: "weather_"}),
		server(mcpguard.Server{Name: "payments", Dial: payments.Dial, ToolPrefix: "pay_",
			Tools: []string{"lookup", "charge"}, IdempotentTools: []string{"lookup"}}),
	}
	reg, err := registry.New(mcpguard.RegistryOptions(servers...)...)
	if err != nil {
		return err
	}
	logger := slog.New(timelineHandler{})
	g, err := mcpguard.New(reg, servers, mcpguard.WithLogger(logger))
	if err != nil {
		return err
	}
	defer g.Close()

	say("assembling: connecting to notes (required), weather (optional), payments (optional)")
	if err := g.Start(ctx); err != nil {
		return fmt.Errorf("a required server is missing: %w", err)
	}
	for _, h := range g.Health() {
		say("  %-8s outcome=%-5s tools=%d", h.Server, h.Outcome, h.Tools)
	}
	for _, d := range g.Degraded() { // optional servers the agent starts without
		say("  starting without %s (%s), last good list offered: %v", d.Server, d.Capability, d.LastGood)
	}

	p, err := breaker.New(breaker.WithRegistry(reg)) // the same registry: one breaker per server
	if err != nil {
		return err
	}
	llm := &scriptedModel{}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Toolsets: []tool.Toolset{g.Toolset()}})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{
		AppName: "mcp-sample", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}, // adkbreaker first
	})
	if err != nil {
		return err
	}

	turns := []struct {
		tool string
		args map[string]any
		note string
	}{
		{"notes_echo", map[string]any{"text": "remember the milk"}, "required server, healthy"},
		{"pay_lookup", map[string]any{"key": "invoice-7"}, "flapping, allowlisted as idempotent: retried"},
		{"pay_charge", map[string]any{"amount": 12}, "flapping, not idempotent: sent once, never retried"},
		{"pay_charge", map[string]any{"amount": 12}, "flapping, up this time"},
		{"weather_forecast", map[string]any{"city": "Paris"}, "optional server down: the model was told"},
	}
	failed := 0
	for i, tc := range turns {
		llm.set(tc.tool, tc.args)
		say("turn %d: model calls %s (%s)", i+1, tc.tool, tc.note)
		msg := genai.NewContentFromText("please help", genai.RoleUser)
		for ev, err := range r.Run(ctx, "user", fmt.Sprint("s", i), msg, agent.RunConfig{}) {
			if err != nil {
				say("  turn failed: %v", err)
				failed++
				break
			}
			for _, part := range ev.Content.Parts {
				switch {
				case part.FunctionResponse != nil:
					say("  %s -> %s", part.FunctionResponse.Name, brief(part.FunctionResponse.Response))
				case part.Text != "" && !ev.Partial:
					say("  model: %s", part.Text)
				}
			}
		}
		if i == 0 {
			if note := llm.notice(); note != "" {
				say("  the model's request said: %q", note)
			}
		}
	}

	var parts []string
	for _, h := range g.Health() {
		parts = append(parts, fmt.Sprintf("%s=%s/%s(retries %d)", h.Server, h.State, h.Outcome, h.Retries))
	}
	fmt.Printf("summary: %d turns, %d failed; weather degraded, notes served; payments charge ran %d time(s) for 2 calls; %s\n",
		len(turns), failed, payments.Executions("charge"), strings.Join(parts, " "))
	return nil
}

func brief(m map[string]any) string {
	s := fmt.Sprint(m)
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	return s
}

// scriptedModel stands in for the model's reasoning: it calls the tool it
// was told to if that tool is declared, and answers with the result.
type scriptedModel struct {
	mu   sync.Mutex
	tool string
	args map[string]any
	last *model.LLMRequest
}

func (m *scriptedModel) set(tool string, args map[string]any) {
	m.mu.Lock()
	m.tool, m.args = tool, args
	m.mu.Unlock()
}

func (m *scriptedModel) notice() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil || m.last.Config == nil || m.last.Config.SystemInstruction == nil {
		return ""
	}
	for _, p := range m.last.Config.SystemInstruction.Parts {
		if i := strings.Index(p.Text, "Temporarily unavailable"); i >= 0 {
			return p.Text[i:]
		}
	}
	return ""
}

func (m *scriptedModel) Name() string { return "scripted" }

func (m *scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	m.last = req
	tl, args := m.tool, m.args
	m.mu.Unlock()
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			if p.FunctionResponse != nil {
				yield(&model.LLMResponse{Content: genai.NewContentFromText("done.", genai.RoleModel), TurnComplete: true}, nil)
				return
			}
		}
		if _, ok := req.Tools[tl]; !ok {
			yield(&model.LLMResponse{Content: genai.NewContentFromText(
				"I can't check that right now: "+strings.TrimSuffix(tl, "_forecast")+" is unavailable.", genai.RoleModel), TurnComplete: true}, nil)
			return
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
			Parts: []*genai.Part{genai.NewPartFromFunctionCall(tl, args)}}}, nil)
	}
}

// timelineHandler prints mcpguard's log lines into the timeline.
type timelineHandler struct{}

func (timelineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (timelineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "server", "operation", "boundary", "limit", "class", "reason", "attempts", "tool":
			if s := a.Value.String(); s != "" {
				fmt.Fprintf(&b, " %s=%s", a.Key, s)
			}
		}
		return true
	})
	say("  log: %s%s", r.Message, b.String())
	return nil
}

func (h timelineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h timelineHandler) WithGroup(string) slog.Handler      { return h }
