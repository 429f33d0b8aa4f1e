package mcpguard_test

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// toolCtx is an agent.ToolContext for calling Tool.Run directly: it is a
// context plus IDs; any other method panics (the embedded nil interface).
type toolCtx struct {
	agent.ToolContext
	ctx  context.Context
	inv  string
	call string
}

func newToolCtx(ctx context.Context) *toolCtx {
	return &toolCtx{ctx: ctx, inv: "inv-1", call: "call-1"}
}

func (c *toolCtx) Deadline() (time.Time, bool)          { return c.ctx.Deadline() }
func (c *toolCtx) Done() <-chan struct{}                { return c.ctx.Done() }
func (c *toolCtx) Err() error                           { return c.ctx.Err() }
func (c *toolCtx) Value(k any) any                      { return c.ctx.Value(k) }
func (c *toolCtx) InvocationID() string                 { return c.inv }
func (c *toolCtx) FunctionCallID() string               { return c.call }
func (c *toolCtx) AgentName() string                    { return "agent" }
func (c *toolCtx) ReadonlyState() session.ReadonlyState { return nil }

// ToolConfirmation returns nil: no confirmation flow (ADK's mcptoolset asks).
func (c *toolCtx) ToolConfirmation() *toolconfirmation.ToolConfirmation { return nil }

// roCtx is an agent.ReadonlyContext for calling Toolset.Tools directly.
type roCtx struct {
	agent.ReadonlyContext
	ctx context.Context
	inv string
}

func (c *roCtx) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *roCtx) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *roCtx) Err() error                  { return c.ctx.Err() }
func (c *roCtx) Value(k any) any             { return c.ctx.Value(k) }
func (c *roCtx) InvocationID() string        { return c.inv }
func (c *roCtx) AgentName() string           { return "agent" }

// testRegistry has a deterministic breaker policy.
func testRegistry(t testing.TB, opts ...registry.Option) *registry.Registry {
	t.Helper()
	reg, err := registry.New(append([]registry.Option{registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, ProbeLease: 2 * time.Minute,
	})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// logBuf collects log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) lines(substr string) []string {
	var out []string
	for _, ln := range strings.Split(l.String(), "\n") {
		if ln != "" && strings.Contains(ln, substr) {
			out = append(out, ln)
		}
	}
	return out
}

func newLogger(buf *logBuf) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// scriptedLLM stands in for the model's reasoning only: on the first step it
// calls Call (if that tool was declared; otherwise it answers without
// tools), and once a function response arrives it answers with its text.
// It records every request.
type scriptedLLM struct {
	Call string
	Args map[string]any

	mu   sync.Mutex
	reqs []*model.LLMRequest
}

func (m *scriptedLLM) Name() string { return "scripted" }

func (m *scriptedLLM) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.Parts {
			if fr := p.FunctionResponse; fr != nil {
				yield(&model.LLMResponse{Content: genai.NewContentFromText(fmt.Sprintf("result: %v", fr.Response), genai.RoleModel), TurnComplete: true}, nil)
				return
			}
		}
		if _, ok := req.Tools[m.Call]; m.Call == "" || !ok {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("answered without tools", genai.RoleModel), TurnComplete: true}, nil)
			return
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			genai.NewPartFromFunctionCall(m.Call, m.Args)}}}, nil)
	}
}

func (m *scriptedLLM) requests() []*model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.LLMRequest(nil), m.reqs...)
}

// systemText returns a request's system instruction text.
func systemText(req *model.LLMRequest) string {
	if req == nil || req.Config == nil || req.Config.SystemInstruction == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// declared returns the function names a request declares.
func declared(req *model.LLMRequest) []string {
	var out []string
	if req == nil || req.Config == nil {
		return nil
	}
	for _, t := range req.Config.Tools {
		for _, fd := range t.FunctionDeclarations {
			out = append(out, fd.Name)
		}
	}
	return out
}

// turn is the outcome of one runner turn.
type turn struct {
	events  []string
	err     error
	final   string
	fnResp  map[string]any
	elapsed time.Duration
}

// runTurn runs one turn on the real ADK runner with the adkbreaker plugin
// registered first and the guard's toolset.
func runTurn(t testing.TB, ctx context.Context, reg *registry.Registry, g *mcpguard.Guard, llm model.LLM, extra ...*plugin.Plugin) turn {
	t.Helper()
	p, err := breaker.New(breaker.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	return runTurnWith(t, ctx, g, llm, append([]*plugin.Plugin{p}, extra...)...)
}

// runTurnWith runs one turn on the real ADK runner with exactly the given
// plugins (none: the guard's toolset on its own).
func runTurnWith(t testing.TB, ctx context.Context, g *mcpguard.Guard, llm model.LLM, plugins ...*plugin.Plugin) turn {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "agent", Model: llm, Toolsets: []tool.Toolset{g.Toolset()}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{
		AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out turn
	start := time.Now()
	for ev, err := range r.Run(ctx, "user", "session", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			out.err = err
			break
		}
		if ev.Content == nil {
			continue
		}
		for _, part := range ev.Content.Parts {
			switch {
			case part.FunctionResponse != nil:
				out.fnResp = part.FunctionResponse.Response
				out.events = append(out.events, "response")
			case part.FunctionCall != nil:
				out.events = append(out.events, "call "+part.FunctionCall.Name)
			case part.Text != "":
				out.final = part.Text
				out.events = append(out.events, "text")
			}
		}
	}
	out.elapsed = time.Since(start)
	return out
}
