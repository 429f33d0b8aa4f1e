package callbacks_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/registry"
)

// fakeToolCtx embeds agent.ToolContext: any method the callbacks do not
// need panics, which keeps the fake honest.
type fakeToolCtx struct {
	agent.ToolContext
	std       context.Context // named: in ADK v2 the tool context type is agent.Context, so an embedded context.Context would clash
	inv, call string
}

func (c *fakeToolCtx) InvocationID() string   { return c.inv }
func (c *fakeToolCtx) FunctionCallID() string { return c.call }
func (c *fakeToolCtx) Branch() string         { return "" }
func (c *fakeToolCtx) AppName() string        { return "app" }
func (c *fakeToolCtx) UserID() string         { return "user" }
func (c *fakeToolCtx) Err() error             { return c.std.Err() }
func (c *fakeToolCtx) Done() <-chan struct{}  { return c.std.Done() }
func (c *fakeToolCtx) Deadline() (time.Time, bool) {
	return c.std.Deadline()
}
func (c *fakeToolCtx) Value(k any) any { return c.std.Value(k) }

type fakeInvCtx struct {
	agent.InvocationContext
	inv string
}

func (c *fakeInvCtx) InvocationID() string { return c.inv }

type fakeTool struct {
	tool.Tool
	name string
}

func (t *fakeTool) Name() string { return t.name }

// runTool is a function tool that does nothing (for the guarded path).
type runTool struct{ fakeTool }

func (t *runTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: t.name}
}
func (t *runTool) Run(agent.ToolContext, any) (map[string]any, error) { return nil, nil }

// benchInvs are the invocation IDs the benchmarks cycle through, one per
// call: with newHandler's repeat limit (MaxRepeatLimit), millions of
// identical calls are never repeats (the repeated-call guard does the same
// work for a call under its limit whatever the limit), and the IDs stay in
// cache as one invocation's ID does.
var benchInvs = func() []string {
	s := make([]string, 256)
	for i := range s {
		s[i] = fmt.Sprintf("e-%036d", i)
	}
	return s
}()

// newHandler returns a handler whose repeated-call guard is on with N =
// MaxRepeatLimit, so that tests and benchmarks repeating one call (in
// different invocations: benchInvs) measure the guard without tripping it.
func newHandler(b testing.TB, opts ...registry.Option) *callbacks.Handler {
	reg, err := registry.New(append([]registry.Option{registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Hour})}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	h, err := callbacks.New(callbacks.Config{Registry: reg, TurnLimit: 1 << 30, RepeatLimit: callbacks.MaxRepeatLimit})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// newHandlerNoRepeat is newHandler with the repeated-call guard off.
func newHandlerNoRepeat(b testing.TB) *callbacks.Handler {
	reg, err := registry.New(registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Hour}))
	if err != nil {
		b.Fatal(err)
	}
	h, err := callbacks.New(callbacks.Config{Registry: reg, TurnLimit: 1 << 30, RepeatLimit: callbacks.NoRepeatLimit})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// containedPolicy is the containment benchmark's configuration: a bulkhead of 20
// and a fixed 1s in-flight slowness threshold.
var containedPolicy = registry.Policy{OpenFor: time.Hour, MaxConcurrent: 20, SlowInFlight: time.Second}

func gbSettings() gobreaker.Settings {
	return gobreaker.Settings{Interval: 60 * time.Second, BucketPeriod: 6 * time.Second, Timeout: time.Hour}
}

// BenchmarkToolPath compares the plugin's tool path with gobreaker alone.
//
//	gobreaker:        bare TwoStep Allow + done(nil) (the baseline)
//	closed:           BeforeTool + AfterTool, admitted (default policy:
//	                  in-flight slowness with a derived threshold)
//	closed-plain:     the same with every containment feature off
//	closed-contained: the same with a bulkhead of 20 and a fixed 1s
//	                  in-flight slowness threshold
//	closed-guarded:   BeforeTool, GuardedTool.Run, AfterTool (the plugin's
//	                  default); -contained as above
//	open:             BeforeTool short-circuit with payload (a new
//	                  invocation every 4 short-circuits, AfterRun included)
//	*-parallel:       the same under b.RunParallel on one dependency (a
//	                  bulkhead of 20 is never full: GOMAXPROCS goroutines)
//	*-parallel-deps:  the same with a dependency per goroutine
func BenchmarkToolPath(b *testing.B) {
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gbSettings())
		b.ReportAllocs()
		for b.Loop() {
			done, err := cb.Allow()
			if err != nil {
				b.Fatal(err)
			}
			done(nil)
		}
	})
	for _, c := range []struct {
		name string
		pol  registry.Policy
	}{
		{"closed", registry.Policy{OpenFor: time.Hour}},
		{"closed-plain", registry.Policy{OpenFor: time.Hour, DisableSlowInFlight: true}},
		{"closed-contained", containedPolicy},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := newHandler(b, registry.WithDefaultPolicy(c.pol))
			ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call"}
			tl := &fakeTool{name: "get_invoice"}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ctx.inv = benchInvs[i&255]
				if r, _ := h.BeforeTool(ctx, tl, nil); r != nil {
					b.Fatal("short-circuited")
				}
				h.AfterTool(ctx, tl, nil, nil, nil)
			}
		})
	}
	// closed-guarded is what the plugin runs by default: BeforeTool, the
	// GuardedTool's Run (marking the call ran, then reporting the tool's own
	// outcome) around a no-op tool, and AfterTool.
	// closed-guarded-contained is the same with a bulkhead of 20 and a
	// fixed 1s in-flight slowness threshold.
	// closed-guarded-norepeat is closed-guarded with the repeated-call
	// guard off: the difference is the guard's cost per call.
	for _, c := range []struct {
		name     string
		opts     []registry.Option
		noRepeat bool
	}{
		{"closed-guarded", nil, false},
		{"closed-guarded-contained", []registry.Option{registry.WithDefaultPolicy(containedPolicy)}, false},
		{"closed-guarded-norepeat", nil, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := newHandler(b, c.opts...)
			if c.noRepeat {
				h = newHandlerNoRepeat(b)
			}
			ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call"}
			gt := h.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ctx.inv = benchInvs[i&255]
				if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
					b.Fatal("short-circuited")
				}
				res, err := gt.Run(ctx, nil)
				h.AfterTool(ctx, gt, nil, res, err)
			}
		})
	}
	b.Run("open", func(b *testing.B) {
		h := newHandler(b)
		_ = h.Registry().Isolate("get_invoice")
		b.ReportAllocs()
		benchOpen(h, "get_invoice", 0, b.Loop)
	})
	b.Run("gobreaker-parallel", func(b *testing.B) {
		cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gbSettings())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				done, err := cb.Allow()
				if err != nil {
					b.Fatal(err)
				}
				done(nil)
			}
		})
	})
	b.Run("closed-parallel", func(b *testing.B) {
		h := newHandler(b)
		var g atomic.Int64
		tl := &fakeTool{name: "get_invoice"}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := g.Add(1)
			ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call-" + strconv.FormatInt(n, 10)}
			for i := 0; pb.Next(); i++ {
				ctx.inv = benchInvs[i&255]
				if r, _ := h.BeforeTool(ctx, tl, nil); r != nil {
					b.Fatal("short-circuited")
				}
				h.AfterTool(ctx, tl, nil, nil, nil)
			}
		})
	})
	b.Run("closed-guarded-contained-parallel", func(b *testing.B) {
		h := newHandler(b, registry.WithDefaultPolicy(containedPolicy))
		gt := h.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
		var g atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := g.Add(1)
			ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call-" + strconv.FormatInt(n, 10)}
			for i := 0; pb.Next(); i++ {
				ctx.inv = benchInvs[i&255]
				if r, _ := h.BeforeTool(ctx, gt, nil); r != nil {
					b.Fatal("short-circuited")
				}
				res, err := gt.Run(ctx, nil)
				h.AfterTool(ctx, gt, nil, res, err)
			}
		})
	})
	b.Run("open-parallel", func(b *testing.B) {
		h := newHandler(b)
		_ = h.Registry().Isolate("get_invoice")
		var g atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			benchOpen(h, "get_invoice", g.Add(1), pb.Next)
		})
	})
	b.Run("gobreaker-parallel-deps", func(b *testing.B) {
		var g atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			_ = g.Add(1)
			cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gbSettings())
			for pb.Next() {
				done, err := cb.Allow()
				if err != nil {
					b.Fatal(err)
				}
				done(nil)
			}
		})
	})
	b.Run("closed-parallel-deps", func(b *testing.B) {
		h := newHandler(b)
		var g atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := g.Add(1)
			tl := &fakeTool{name: "tool_" + strconv.FormatInt(n, 10)}
			ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call-" + strconv.FormatInt(n, 10)}
			for i := 0; pb.Next(); i++ {
				ctx.inv = benchInvs[i&255]
				if r, _ := h.BeforeTool(ctx, tl, nil); r != nil {
					b.Fatal("short-circuited")
				}
				h.AfterTool(ctx, tl, nil, nil, nil)
			}
		})
	})
}

// benchOpen short-circuits with a fresh invocation every 4 calls, so counts
// stay in the realistic range (a turn ends after H=5) and AfterRun's cost is
// included. next is b.Loop or a RunParallel pb.Next.
func benchOpen(h *callbacks.Handler, name string, g int64, next func() bool) {
	tl := &fakeTool{name: name}
	invs := make([]string, 1024)
	for i := range invs {
		invs[i] = fmt.Sprintf("e-%d-%d", g, i)
	}
	ctx := &fakeToolCtx{std: context.Background(), call: "adk-call"}
	ictx := &fakeInvCtx{}
	for i := 0; next(); i++ {
		ctx.inv = invs[(i/4)%len(invs)]
		if r, _ := h.BeforeTool(ctx, tl, nil); r == nil {
			panic("admitted while open")
		}
		h.AfterTool(ctx, tl, nil, nil, nil)
		if i%4 == 3 {
			ictx.inv = ctx.inv
			h.AfterRun(ictx)
		}
	}
}
