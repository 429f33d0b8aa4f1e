package callbacks

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/registry"
)

// guardCtx is one call's tool context: a distinct object per call, with
// the IDs and the context.Context part the guarded path reads.
type guardCtx struct {
	agent.ToolContext
	call string
}

func (c *guardCtx) FunctionCallID() string      { return c.call }
func (c *guardCtx) InvocationID() string        { return "inv" }
func (c *guardCtx) AppName() string             { return "app" }
func (c *guardCtx) UserID() string              { return "user" }
func (c *guardCtx) Err() error                  { return nil }
func (c *guardCtx) Done() <-chan struct{}       { return nil }
func (c *guardCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *guardCtx) Value(any) any               { return nil }

// scriptTool is a function tool returning what it is told to.
type scriptTool struct {
	tool.Tool
	res map[string]any
	err error
}

func (t *scriptTool) Name() string { return "lookup" }
func (t *scriptTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "lookup"}
}
func (t *scriptTool) Run(agent.ToolContext, any) (map[string]any, error) {
	return t.res, t.err
}

func newGuardHandler(t *testing.T, deps map[registry.Key]Dependency) *Handler {
	t.Helper()
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true, OpenFor: time.Hour}))
	h, err := New(Config{Registry: reg, RepeatLimit: NoRepeatLimit, Mappings: []Mapping{{Tools: []string{"lookup"}, Dependency: "dep"}}, Dependencies: deps})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func reported(t *testing.T, h *Handler) [3]uint64 {
	t.Helper()
	br, ok := h.Registry().Lookup("dep")
	if !ok {
		t.Fatal("no breaker")
	}
	return br.Reported()
}

// TestGuardedRunReportsOnceAndRemovesPlainCalls: a guarded call on a closed
// breaker is admitted by its Run, not BeforeTool, and Run reports the tool's
// own outcome exactly once. A success leaves nothing pending (the last-good
// cache gets the tool's own result from Run); a tool error leaves an entry
// for OnToolError and AfterTool, which remove it without counting again —
// whichever shard storage (slice or overflow map) holds it.
func TestGuardedRunReportsOnceAndRemovesPlainCalls(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name      string
		err       error
		lastGood  bool
		overflow  bool
		keptAfter bool // the entry is still pending after Run
		want      [3]uint64
	}{
		{name: "success", want: [3]uint64{1, 0, 0}},
		{name: "success, overflow map", overflow: true, want: [3]uint64{1, 0, 0}},
		{name: "tool error", err: boom, keptAfter: true, want: [3]uint64{0, 1, 0}},
		{name: "tool error, overflow map", err: boom, overflow: true, keptAfter: true, want: [3]uint64{0, 1, 0}},
		{name: "success, last-good cache", lastGood: true, want: [3]uint64{1, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var deps map[registry.Key]Dependency
			if c.lastGood {
				deps = map[registry.Key]Dependency{"dep": {CacheLastGood: true}}
			}
			h := newGuardHandler(t, deps)
			inner := &scriptTool{res: map[string]any{"record": "own"}, err: c.err}
			gt := h.Guard(inner).(*GuardedTool)
			var fill []*guardCtx
			if c.overflow { // fill the call's shard slice (unguarded calls are pending from BeforeTool) so that a kept entry lands in the overflow map
				for range smallPending {
					f := &guardCtx{call: sameShardID}
					fill = append(fill, f)
					if r, _ := h.BeforeTool(f, inner, nil); r != nil {
						t.Fatal("short-circuited")
					}
				}
			}
			ctx := &guardCtx{call: sameShardID}
			if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
				t.Fatal("short-circuited")
			}
			before, _ := h.Pending()
			if before != len(fill) {
				t.Fatalf("pending after BeforeTool = %d, want %d: the guarded call is admitted by Run, not BeforeTool", before, len(fill))
			}
			_, err := gt.Run(ctx, nil)
			after, _ := h.Pending()
			if kept := after == before+1; kept != c.keptAfter || after < before {
				t.Fatalf("pending %d → %d after Run: kept = %v, want %v", before, after, kept, c.keptAfter)
			}
			if got := reported(t, h); got != c.want {
				t.Fatalf("reported after Run = %v, want %v", got, c.want)
			}
			if err != nil {
				h.OnToolError(ctx, gt, nil, err)
			}
			// A callback ahead changed the result: the cache keeps the tool's own.
			h.AfterTool(ctx, gt, nil, map[string]any{"record": "rewritten"}, err)
			if got := reported(t, h); got != c.want {
				t.Fatalf("reported after AfterTool = %v, want %v (counted twice?)", got, c.want)
			}
			if n, _ := h.Pending(); n != len(fill) {
				t.Fatalf("pending after AfterTool = %d, want %d", n, len(fill))
			}
			if c.lastGood {
				v, ok := gt.bd.Load().lastGood.Load(scopeOf(ctx), nil)
				if !ok || v.Result["record"] != "own" {
					t.Fatalf("last good = %v, %v; want the tool's own result", v.Result, ok)
				}
			}
			for _, f := range fill {
				h.AfterTool(f, inner, nil, nil, nil)
			}
			if n, _ := h.Pending(); n != 0 {
				t.Fatalf("pending at the end = %d", n)
			}
		})
	}
}

// TestGuardedRunWithoutBeforeTool: a GuardedTool run without the handler's
// BeforeTool (nothing admitted) reports nothing and creates no breaker.
func TestGuardedRunWithoutBeforeTool(t *testing.T) {
	h := newGuardHandler(t, nil)
	gt := h.Guard(&scriptTool{err: errors.New("boom")}).(*GuardedTool)
	if _, err := gt.Run(&guardCtx{call: "adk-call-000001"}, nil); err == nil {
		t.Fatal("the tool's error was lost")
	}
	if _, ok := h.Registry().Lookup("dep"); ok {
		t.Fatal("Run created a breaker")
	}
}

// TestGuardRequestCarriesTheBinding: BeforeModel's guard hands a GuardedTool
// the tool's binding when it is resolved already, so its calls skip the
// resolver; a tool not yet bound gets it from its first BeforeTool.
func TestGuardRequestCarriesTheBinding(t *testing.T) {
	h := newGuardHandler(t, nil)
	inner := &scriptTool{}
	req := &model.LLMRequest{Tools: map[string]any{"lookup": inner}}
	h.guardRequest(req)
	g1 := req.Tools["lookup"].(*GuardedTool)
	if g1.bd.Load() != nil {
		t.Fatal("bound before the dependency was ever called")
	}
	ctx := &guardCtx{call: "adk-call-000001"}
	h.BeforeTool(ctx, g1, nil)
	bd := g1.bd.Load()
	if bd == nil || bd.key != "dep" {
		t.Fatalf("binding after BeforeTool = %+v", bd)
	}
	if _, err := g1.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h.AfterTool(ctx, g1, nil, nil, nil)
	req = &model.LLMRequest{Tools: map[string]any{"lookup": inner}}
	h.guardRequest(req)
	if g2 := req.Tools["lookup"].(*GuardedTool); g2 == g1 || g2.bd.Load() != bd {
		t.Fatalf("the next request's GuardedTool carries %p, want the cached binding %p", g2.bd.Load(), bd)
	}
	if got := reported(t, h); got != [3]uint64{1, 0, 0} {
		t.Fatalf("reported = %v", got)
	}
}
