package callbacks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/registry"
)

// BenchmarkRepeatGuard measures the repeated-call guard on the plugin's
// default path (BeforeTool, GuardedTool.Run, AfterTool) at 100 calls per
// turn, each with its own arguments ({"id": "inv-N", "page": N}), AfterRun
// included: one op is one invocation. "on" is the default (N = 3), "off"
// is RepeatLimit = NoRepeatLimit; ns/call and B/op (per invocation) are
// what the guard adds.
func BenchmarkRepeatGuard(b *testing.B) {
	const calls = 100
	args := make([]map[string]any, calls)
	for i := range args {
		args[i] = map[string]any{"id": fmt.Sprintf("inv-%d", i), "page": float64(i)}
	}
	invs := make([]string, 1<<16)
	for i := range invs {
		invs[i] = fmt.Sprintf("e-%036d", i)
	}
	for _, c := range []struct {
		name  string
		limit int
	}{{"off", callbacks.NoRepeatLimit}, {"on", 0}} {
		b.Run(c.name, func(b *testing.B) {
			reg, err := registry.New(registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Hour}))
			if err != nil {
				b.Fatal(err)
			}
			h, err := callbacks.New(callbacks.Config{Registry: reg, TurnLimit: 1 << 30, RepeatLimit: c.limit})
			if err != nil {
				b.Fatal(err)
			}
			gt := h.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
			ctx := &fakeToolCtx{std: context.Background(), call: "adk-call"}
			ictx := &fakeInvCtx{}
			cbctx := &fakeCbCtx{}
			// Each call is listed by a model response of its own (AfterModel
			// counts it), the worst case: a response usually lists several.
			listed := make([]*model.LLMResponse, calls)
			for i, a := range args {
				listed[i] = &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
					{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: a}}}}}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				ctx.inv = invs[n&(len(invs)-1)]
				n++
				cbctx.inv = ctx.inv
				for i, a := range args {
					h.AfterModel(cbctx, listed[i], nil)
					if r, _ := h.BeforeTool(ctx, gt, a); r != nil {
						b.Fatal("refused")
					}
					res, err := gt.Run(ctx, a)
					h.AfterTool(ctx, gt, a, res, err)
				}
				ictx.inv = ctx.inv
				h.AfterRun(ictx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*calls), "ns/call")
			if tk, inv := h.Pending(); tk != 0 || inv != 0 {
				b.Fatalf("state left: %d %d", tk, inv)
			}
		})
	}
}
