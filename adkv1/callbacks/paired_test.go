package callbacks_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"

	"github.com/sony/gobreaker/v2"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestPairedToolPath measures the tool path against gobreaker in short
// interleaved blocks and reports the median per-block ratio: each block of
// the plugin's path is divided by the gobreaker block measured right next to
// it, so machine-wide drift cancels out (see docs/benchmarks.md). It is a
// measurement, not an assertion, and runs only with PAIRED=1:
//
//	PAIRED=1 go test -run TestPairedToolPath -v ./callbacks/
func TestPairedToolPath(t *testing.T) {
	if os.Getenv("PAIRED") == "" {
		t.Skip("set PAIRED=1 to measure")
	}
	const blocks, n = 300, 5000
	cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gbSettings())
	hClosed := newHandler(t)
	hPlain := newHandler(t, registry.WithDefaultPolicy(registry.Policy{OpenFor: time.Hour, DisableSlowInFlight: true}))
	hContained := newHandler(t, registry.WithDefaultPolicy(containedPolicy))
	hGuarded := newHandler(t)
	gt := hGuarded.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
	hGuardedOff := newHandlerNoRepeat(t) // the repeated-call guard off
	gto := hGuardedOff.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
	hGuardedC := newHandler(t, registry.WithDefaultPolicy(containedPolicy))
	gtc := hGuardedC.Guard(&runTool{fakeTool{name: "get_invoice"}}).(*callbacks.GuardedTool)
	hOpen := newHandler(t)
	_ = hOpen.Registry().Isolate("get_invoice")
	tl := &fakeTool{name: "get_invoice"}
	ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call-0001"}
	ci := 0 // the closed rows cycle through benchInvs (see newHandler)
	octx := &fakeToolCtx{std: context.Background(), call: "adk-call-0002"}
	ictx := &fakeInvCtx{}
	invs := make([]string, 1024)
	for i := range invs {
		invs[i] = fmt.Sprintf("e-%d", i)
	}
	oi := 0
	ops := []struct {
		name string
		run  func()
	}{
		{"gobreaker allow+done", func() {
			for range n {
				done, _ := cb.Allow()
				done(nil)
			}
		}},
		{"closed before+after", func() {
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hClosed.BeforeTool(ctx, tl, nil)
				hClosed.AfterTool(ctx, tl, nil, nil, nil)
			}
		}},
		{"closed, plain", func() {
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hPlain.BeforeTool(ctx, tl, nil)
				hPlain.AfterTool(ctx, tl, nil, nil, nil)
			}
		}},
		{"closed, contained", func() {
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hContained.BeforeTool(ctx, tl, nil)
				hContained.AfterTool(ctx, tl, nil, nil, nil)
			}
		}},
		{"closed, guarded", func() { // the plugin's default: BeforeTool, GuardedTool.Run, AfterTool
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hGuarded.BeforeTool(ctx, gt, nil)
				res, err := gt.Run(ctx, nil)
				hGuarded.AfterTool(ctx, gt, nil, res, err)
			}
		}},
		{"closed, guarded, no rep.", func() { // the same without the repeated-call guard
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hGuardedOff.BeforeTool(ctx, gto, nil)
				res, err := gto.Run(ctx, nil)
				hGuardedOff.AfterTool(ctx, gto, nil, res, err)
			}
		}},
		{"closed, guarded+cont.", func() { // the same with a bulkhead and a fixed slowness threshold
			for range n {
				ctx.inv = benchInvs[ci&255]
				ci++
				hGuardedC.BeforeTool(ctx, gtc, nil)
				res, err := gtc.Run(ctx, nil)
				hGuardedC.AfterTool(ctx, gtc, nil, res, err)
			}
		}},
		{"open short-circuit", func() {
			for range n {
				octx.inv = invs[(oi/4)%len(invs)]
				hOpen.BeforeTool(octx, tl, nil)
				hOpen.AfterTool(octx, tl, nil, nil, nil)
				if oi%4 == 3 {
					ictx.inv = octx.inv
					hOpen.AfterRun(ictx)
				}
				oi++
			}
		}},
	}
	ns := make([][]float64, len(ops))
	for bl := range blocks {
		for j := range ops {
			k := (j + bl) % len(ops)
			start := time.Now()
			ops[k].run()
			ns[k] = append(ns[k], float64(time.Since(start).Nanoseconds())/n)
		}
	}
	t.Logf("%-22s %10s %8s %8s %8s", "op", "med ns/op", "ratio", "q25", "q75")
	for k := range ops {
		ratios := make([]float64, blocks)
		for i := range ratios {
			ratios[i] = ns[k][i] / ns[0][i]
		}
		slices.Sort(ratios)
		med := slices.Clone(ns[k])
		slices.Sort(med)
		t.Logf("%-22s %10.1f %8.3f %8.3f %8.3f", ops[k].name, med[blocks/2], ratios[blocks/2], ratios[blocks/4], ratios[3*blocks/4])
	}
}
