package failover_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// step is one scripted call of a fakeLLM.
type step struct {
	chunks  []string // texts: all but the last are partial when streaming
	err     error    // yielded after the chunks
	waitCtx bool     // block until the call's context ends, then yield its error
	block   chan struct{}
	entered chan struct{} // if set, gets a value (without waiting) when the call starts
	hang    chan struct{} // block until closed, ignoring the context; then answer "late"
	panic   bool
	meta    map[string]any // CustomMetadata of every response
}

// fakeLLM is a scripted model.LLM that, like model/gemini, mutates the
// request it is given.
type fakeLLM struct {
	name    string
	backend genai.Backend

	mu     sync.Mutex
	steps  []step
	def    step
	models []string // req.Model of every call
	ctxs   []context.Context
	calls  atomic.Int64
}

func newFake(name string, def step) *fakeLLM {
	return &fakeLLM{name: name, backend: genai.BackendGeminiAPI, def: def}
}

func (f *fakeLLM) Name() string                       { return f.name }
func (f *fakeLLM) GetGoogleLLMVariant() genai.Backend { return f.backend }

func (f *fakeLLM) script(s ...step) {
	f.mu.Lock()
	f.steps = append(f.steps, s...)
	f.mu.Unlock()
}

func (f *fakeLLM) setDefault(s step) {
	f.mu.Lock()
	f.def = s
	f.mu.Unlock()
}

func (f *fakeLLM) seenModels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.models...)
}

func (f *fakeLLM) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	f.calls.Add(1)
	f.mu.Lock()
	s := f.def
	if len(f.steps) > 0 {
		s, f.steps = f.steps[0], f.steps[1:]
	}
	f.models = append(f.models, req.Model)
	f.ctxs = append(f.ctxs, ctx)
	f.mu.Unlock()
	// What model/gemini and genai do to the request they are given.
	req.Contents = append(req.Contents, genai.NewContentFromText("continue", genai.RoleUser))
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	if req.Config.HTTPOptions == nil {
		req.Config.HTTPOptions = &genai.HTTPOptions{}
	}
	if req.Config.HTTPOptions.Headers == nil {
		req.Config.HTTPOptions.Headers = http.Header{}
	}
	req.Config.HTTPOptions.Headers.Set("x-fake", f.name)
	return func(yield func(*model.LLMResponse, error) bool) {
		if s.entered != nil {
			select {
			case s.entered <- struct{}{}:
			default:
			}
		}
		if s.block != nil {
			select {
			case <-s.block:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		if s.hang != nil {
			<-s.hang
			yield(&model.LLMResponse{Content: genai.NewContentFromText("late", genai.RoleModel)}, nil)
			return
		}
		if s.panic {
			panic("fake endpoint panic")
		}
		if s.waitCtx {
			<-ctx.Done()
			yield(nil, ctx.Err())
			return
		}
		var all string
		for i, c := range s.chunks {
			all += c
			last := i == len(s.chunks)-1
			r := &model.LLMResponse{Content: genai.NewContentFromText(c, genai.RoleModel), CustomMetadata: s.meta}
			if stream {
				r.Partial = true
			} else if !last {
				continue
			} else {
				r.Content = genai.NewContentFromText(all, genai.RoleModel)
			}
			if !yield(r, nil) {
				return
			}
		}
		if stream && len(s.chunks) > 0 && s.err == nil {
			if !yield(&model.LLMResponse{Content: genai.NewContentFromText(all, genai.RoleModel), TurnComplete: true, CustomMetadata: s.meta}, nil) {
				return
			}
		}
		if s.err != nil {
			yield(nil, s.err)
		}
	}
}

func answer(text ...string) step { return step{chunks: text} }

func apiErr(code int, status string, details ...map[string]any) error {
	return genai.APIError{Code: code, Status: status, Message: "fake " + status, Details: details}
}

func retryInfo(delay string) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
}

func dailyQuota() map[string]any {
	return map[string]any{
		"@type": "type.googleapis.com/google.rpc.QuotaFailure",
		"violations": []any{map[string]any{
			"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
			"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			"quotaValue":  "50",
		}},
	}
}

// tripOnHint returns p with TripOnRetryHint on: a failure with a retry
// hint opens the breaker at once, for the hint (an explicit opt-in: the
// registry default, like DefaultPolicy, does not).
func tripOnHint(p registry.Policy) registry.Policy {
	on := true
	p.TripOnRetryHint = &on
	return p
}

// env is a registry on a fake clock with two fake endpoints.
type env struct {
	clk           *registrytest.FakeClock
	reg           *registry.Registry
	primary, fall *fakeLLM
	m             *failover.Model
	logs          *logBuf
}

const (
	primaryKey  registry.Key = "model:primary-model@gemini_api/"
	fallbackKey registry.Key = "model:fallback-model@gemini_api/"
)

// testPolicy trips after 2 consecutive failures and holds for 30s, without
// jitter.
func testPolicy() registry.Policy {
	p := failover.DefaultPolicy()
	p.ConsecutiveFailures = 2
	p.DisableFailureRate = true
	p.NoJitter = true
	return p
}

func newEnv(t *testing.T, pol registry.Policy, opts ...failover.Option) *env {
	t.Helper()
	e := &env{clk: registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), logs: &logBuf{}}
	e.reg = registry.MustNew(registry.WithClock(e.clk),
		registry.WithPolicy(primaryKey, pol), registry.WithPolicy(fallbackKey, pol))
	e.primary = newFake("primary-model", answer("from primary"))
	e.fall = newFake("fallback-model", answer("from fallback"))
	// Most tests here look at the *failover.Error; the readable answer (the
	// default) is tested where an option asks for it.
	opts = append([]failover.Option{failover.WithLogger(e.logs.logger()), failover.WithLogInterval(-1), failover.WithErrorWhenUnavailable()}, opts...)
	m, err := failover.New("chat", e.reg, []failover.Endpoint{
		{LLM: e.primary, Key: primaryKey},
		{LLM: e.fall, Key: fallbackKey},
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	e.m = m
	return e
}

type result struct {
	resps []*model.LLMResponse
	errs  []error
}

func (r result) text() string {
	var b strings.Builder
	for _, x := range r.resps {
		if x.Partial || x.Content == nil {
			continue
		}
		for _, p := range x.Content.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (r result) last() *model.LLMResponse {
	if len(r.resps) == 0 {
		return nil
	}
	return r.resps[len(r.resps)-1]
}

func (r result) err() error { return errors.Join(r.errs...) }

func run(ctx context.Context, m model.LLM, req *model.LLMRequest, stream bool) result {
	var out result
	for resp, err := range m.GenerateContent(ctx, req, stream) {
		if err != nil {
			out.errs = append(out.errs, err)
			continue
		}
		out.resps = append(out.resps, resp)
	}
	return out
}

func userReq(text string) *model.LLMRequest {
	return &model.LLMRequest{Model: "chat", Contents: []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}}
}

// logBuf captures slog output as text.
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

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func (l *logBuf) count(substr string) int { return strings.Count(l.String(), substr) }

func meta(r *model.LLMResponse, k string) any {
	if r == nil || r.CustomMetadata == nil {
		return nil
	}
	return r.CustomMetadata[k]
}
