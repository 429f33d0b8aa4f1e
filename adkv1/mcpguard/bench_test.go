package mcpguard_test

import (
	"context"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/mcptoolset"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

type runnable interface {
	tool.Tool
	Run(ctx agent.ToolContext, args any) (map[string]any, error)
}

// BenchmarkCall compares one tool call on a healthy in-process server
// through ADK's own mcptoolset (unwrapped) and through mcpguard (wrapped),
// each with the adkbreaker plugin's BeforeTool/AfterTool around it, in the
// same run.
func BenchmarkCall(b *testing.B) {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	ctx := context.Background()
	args := map[string]any{"text": "hello"}

	adkSet, err := mcptoolset.New(mcptoolset.Config{Transport: fs.Transport()})
	if err != nil {
		b.Fatal(err)
	}
	adkTools, err := adkSet.Tools(&roCtx{ctx: ctx, inv: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var unwrapped runnable
	for _, t := range adkTools {
		if t.Name() == "echo" {
			unwrapped = t.(runnable)
		}
	}

	reg := testRegistry(b)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "bench", Dial: fs.Dial}})
	defer g.Close()
	ts, err := g.Toolset().Tools(&roCtx{ctx: ctx, inv: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var wrapped runnable
	for _, t := range ts {
		if t.Name() == "echo" {
			wrapped = t.(runnable)
		}
	}
	h, err := breaker.NewHandler(breaker.WithRegistry(reg))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		t    runnable
	}{{"unwrapped_adk_mcptoolset", unwrapped}, {"wrapped_mcpguard", wrapped}} {
		b.Run(bc.name, func(b *testing.B) {
			tc := newToolCtx(ctx)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.BeforeTool(tc, bc.t, args); err != nil {
					b.Fatal(err)
				}
				out, err := bc.t.Run(tc, args)
				if err != nil || out["output"] != "hello" {
					b.Fatalf("out=%v err=%v", out, err)
				}
				if _, err := h.AfterTool(tc, bc.t, args, out, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
