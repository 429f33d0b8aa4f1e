package failover_test

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

// benchLLM is a fake in-process endpoint: a fresh one-response answer per
// call, as model/gemini yields (its own cost is in every sub-benchmark).
type benchLLM struct{ content *genai.Content }

func (b *benchLLM) Name() string { return "bench-model" }
func (b *benchLLM) GenerateContent(_ context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: b.content, TurnComplete: true}, nil)
	}
}

var sink *model.LLMResponse

func drain(b *testing.B, m model.LLM, req *model.LLMRequest) {
	for r, err := range m.GenerateContent(context.Background(), req, false) {
		if err != nil {
			b.Fatal(err)
		}
		sink = r
	}
}

// BenchmarkOverhead compares, in one run, a call to a fake endpoint made
// directly, through a failover Model of two endpoints (the primary
// answering), and gobreaker's bare TwoStep Allow+done for reference:
//
//	overhead = failover − direct, target ≤ 1.5 × gobreaker
func BenchmarkOverhead(b *testing.B) {
	ep := &benchLLM{content: genai.NewContentFromText("ok", genai.RoleModel)}
	req := &model.LLMRequest{Model: "chat", Contents: []*genai.Content{
		genai.NewContentFromText("system", genai.RoleUser), genai.NewContentFromText("hi", genai.RoleUser),
	}, Config: &genai.GenerateContentConfig{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	newModel := func(b *testing.B, timeout time.Duration, opts ...failover.Option) *failover.Model {
		reg := registry.MustNew(failover.PolicyOptions("p", "f")...)
		m, err := failover.New("chat", reg, []failover.Endpoint{
			{LLM: ep, Key: "p", Timeout: timeout}, {LLM: ep, Key: "f"},
		}, append([]failover.Option{failover.WithLogger(quiet)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(m.Close)
		return m
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			drain(b, ep, req)
		}
	})
	b.Run("failover", func(b *testing.B) {
		m := newModel(b, 0)
		b.ReportAllocs()
		for b.Loop() {
			drain(b, m, req)
		}
	})
	b.Run("failover_nometa", func(b *testing.B) {
		m := newModel(b, 0, failover.WithoutResponseMetadata())
		b.ReportAllocs()
		for b.Loop() {
			drain(b, m, req)
		}
	})
	b.Run("failover_timeout", func(b *testing.B) {
		m := newModel(b, time.Minute)
		b.ReportAllocs()
		for b.Loop() {
			drain(b, m, req)
		}
	})
	b.Run("failover_primary_open", func(b *testing.B) {
		m := newModel(b, 0)
		if err := m.Registry().Isolate("p"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			drain(b, m, req)
		}
	})
	b.Run("gobreaker", func(b *testing.B) {
		cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{Name: "ref"})
		b.ReportAllocs()
		for b.Loop() {
			done, err := cb.Allow()
			if err != nil {
				b.Fatal(err)
			}
			done(nil)
		}
	})
}

// TestPairedOverhead measures the failover overhead against gobreaker in
// short interleaved blocks and reports the median per-block ratio
// (failover − direct) / gobreaker, so machine-wide drift cancels out. It is
// a measurement, not an assertion, and runs only with PAIRED=1:
//
//	PAIRED=1 go test -run TestPairedOverhead -v ./failover/
func TestPairedOverhead(t *testing.T) {
	if os.Getenv("PAIRED") == "" {
		t.Skip("set PAIRED=1 to measure")
	}
	const blocks, n = 300, 2000
	ep := &benchLLM{content: genai.NewContentFromText("ok", genai.RoleModel)}
	req := &model.LLMRequest{Model: "chat", Contents: []*genai.Content{
		genai.NewContentFromText("system", genai.RoleUser), genai.NewContentFromText("hi", genai.RoleUser),
	}, Config: &genai.GenerateContentConfig{}}
	quiet := slog.New(slog.DiscardHandler)
	mk := func(opts ...failover.Option) *failover.Model {
		reg := registry.MustNew(failover.PolicyOptions("p", "f")...)
		m := failover.MustNew("chat", reg, []failover.Endpoint{{LLM: ep, Key: "p"}, {LLM: ep, Key: "f"}},
			append([]failover.Option{failover.WithLogger(quiet)}, opts...)...)
		t.Cleanup(m.Close)
		return m
	}
	m, mNoMeta := mk(), mk(failover.WithoutResponseMetadata())
	cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{Name: "ref"})
	call := func(l model.LLM) {
		for range n {
			for r := range l.GenerateContent(context.Background(), req, false) {
				sink = r
			}
		}
	}
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
		{"direct", func() { call(ep) }},
		{"failover", func() { call(m) }},
		{"failover nometa", func() { call(mNoMeta) }},
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
	med := func(xs []float64) (q25, q50, q75 float64) {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/4], s[len(s)/2], s[3*len(s)/4]
	}
	t.Logf("%-22s %10s", "op", "med ns/op")
	for k := range ops {
		_, q50, _ := med(ns[k])
		t.Logf("%-22s %10.1f", ops[k].name, q50)
	}
	for _, k := range []int{2, 3} {
		r := make([]float64, blocks)
		for i := range r {
			r[i] = (ns[k][i] - ns[1][i]) / ns[0][i]
		}
		q25, q50, q75 := med(r)
		t.Logf("(%s − direct) / gobreaker: median %.2f (q25 %.2f, q75 %.2f)", ops[k].name, q50, q25, q75)
	}
}
