package failover_test

// End-to-end tests: the real genai client and ADK's model/gemini, built by
// FromConfig, against fake Gemini REST endpoints on 127.0.0.1, inside full
// ADK runner turns with the adkbreaker plugin registered. No test reaches
// the internet.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// reply is one scripted answer of a fake Gemini endpoint.
type reply struct {
	status int         // 0: 200
	header http.Header // extra response headers
	body   string      // error body (status ≥ 400) or unary JSON; empty: agentic
	chunks []string    // SSE texts, overriding the agentic answer
	sseErr string      // a raw error line written after the chunks
}

const (
	body503 = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	body429 = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`
	bodyDay = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"primary-model"},"quotaValue":"50"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"39s"}]}}`
)

// fakeGemini is a fake Gemini API endpoint. Without a script it answers
// agentically: a call of the "lookup" tool, then, once the tool's response
// is in the request, a text naming the model the path asked for.
type fakeGemini struct {
	srv   *httptest.Server
	mu    sync.Mutex
	queue []reply
	def   reply
	paths []string
	hits  atomic.Int64
	// before, if set, is asked first on every request (under mu): a non-nil
	// reply answers it (a rate limiter on the test's clock).
	before func() *reply
}

func newFakeGemini(t *testing.T) *fakeGemini {
	f := &fakeGemini{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) script(r ...reply) {
	f.mu.Lock()
	f.queue = append(f.queue, r...)
	f.mu.Unlock()
}

func (f *fakeGemini) setDefault(r reply) {
	f.mu.Lock()
	f.def = r
	f.mu.Unlock()
}

func (f *fakeGemini) seenPaths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

func (f *fakeGemini) handle(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	f.mu.Lock()
	rp := f.def
	if len(f.queue) > 0 {
		rp, f.queue = f.queue[0], f.queue[1:]
	}
	if f.before != nil {
		if b := f.before(); b != nil {
			rp = *b
		}
	}
	p := r.URL.Path
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	f.paths = append(f.paths, p)
	f.mu.Unlock()
	if r.Header.Get("x-goog-api-key") == "" {
		http.Error(w, `{"error":{"code":401,"message":"no key","status":"UNAUTHENTICATED"}}`, http.StatusUnauthorized)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	for k, vs := range rp.header {
		w.Header()[k] = vs
	}
	if rp.status >= 400 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
		return
	}
	modelName := strings.TrimPrefix(p[:strings.IndexByte(p, ':')], "/v1beta/models/")
	texts := rp.chunks
	var part string
	if len(texts) == 0 {
		var req struct {
			Contents []struct {
				Parts []struct {
					FunctionResponse *struct {
						Response map[string]any `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		_ = json.Unmarshal(raw, &req)
		called := false
		for _, c := range req.Contents {
			for _, pt := range c.Parts {
				if pt.FunctionResponse != nil {
					called = true
				}
			}
		}
		if called {
			texts = []string{"answer from ", modelName}
		} else {
			part = `{"functionCall":{"name":"lookup","args":{"q":"x"}}}`
		}
	}
	candidate := func(parts string) string {
		return `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"finishReason":"STOP"}],"modelVersion":"` + modelName + `"}`
	}
	textPart := func(s string) string { b, _ := json.Marshal(s); return `{"text":` + string(b) + `}` }
	if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		if part != "" {
			fmt.Fprintf(w, "data: %s\n\n", candidate(part))
		}
		for i, t := range texts {
			c := `{"candidates":[{"content":{"role":"model","parts":[` + textPart(t) + `]}}]}`
			if i == len(texts)-1 && rp.sseErr == "" {
				c = candidate(textPart(t))
			}
			fmt.Fprintf(w, "data: %s\n\n", c)
			if fl != nil {
				fl.Flush()
			}
		}
		if rp.sseErr != "" {
			fmt.Fprintf(w, "%s\n", rp.sseErr)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rp.body != "" {
		io.WriteString(w, rp.body)
		return
	}
	if part == "" {
		part = textPart(strings.Join(texts, ""))
	}
	io.WriteString(w, candidate(part))
}

// e2e is a failover chain of two fake Gemini endpoints in an ADK runner.
type e2e struct {
	primary, fallback *fakeGemini
	chain             config.ModelChain
	clk               *registrytest.FakeClock
	reg               *registry.Registry
	m                 *failover.Model
	h                 *callbacks.Handler
	r                 *runner.Runner
	toolCalls         atomic.Int64
	logs              *logBuf
	pKey, fKey        registry.Key
	turnN             int
}

func clearGenaiEnv(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
		"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_REGION", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("FAKE_GEMINI_KEY", "test-key")
}

func newE2E(t *testing.T, pol registry.Policy, opts ...failover.Option) *e2e {
	t.Helper()
	clearGenaiEnv(t)
	e := &e2e{primary: newFakeGemini(t), fallback: newFakeGemini(t), logs: &logBuf{},
		clk: registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.chain = config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "primary-model", Backend: config.BackendGeminiAPI, BaseURL: e.primary.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"},
		{Model: "fallback-model", Backend: config.BackendGeminiAPI, BaseURL: e.fallback.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"},
	}}
	e.pKey = registry.Key(e.chain.Endpoints[0].Identity())
	e.fKey = registry.Key(e.chain.Endpoints[1].Identity())
	e.reg = registry.MustNew(registry.WithClock(e.clk), registry.WithPolicy(e.pKey, pol), registry.WithPolicy(e.fKey, pol))
	opts = append([]failover.Option{failover.WithLogger(e.logs.logger()), failover.WithLogInterval(-1)}, opts...)
	m, err := failover.FromConfig(t.Context(), "assistant-model", e.chain, e.reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	e.m = m
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks something up."},
		func(_ agent.ToolContext, args struct {
			Q string `json:"q"`
		}) (map[string]any, error) {
			e.toolCalls.Add(1)
			return map[string]any{"value": 42}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Instruction: "Use lookup.", Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	e.h, err = breaker.NewHandler(breaker.WithRegistry(e.reg), breaker.WithModelGuard(m))
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.FromHandler(e.h, "")
	if err != nil {
		t.Fatal(err)
	}
	e.r, err = runner.New(runner.Config{AppName: "failover-test", Agent: a, SessionService: session.InMemoryService(),
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type turnResult struct {
	events   []*session.Event
	err      error
	final    *session.Event // last non-partial model event with text
	partials []string
}

func (tr turnResult) text() string {
	if tr.final == nil || tr.final.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range tr.final.Content.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (tr turnResult) meta(k string) any {
	if tr.final == nil {
		return nil
	}
	return tr.final.CustomMetadata[k]
}

// turn runs one user turn in a new session.
func (e *e2e) turn(t *testing.T, stream bool) turnResult {
	t.Helper()
	e.turnN++
	rc := agent.RunConfig{}
	if stream {
		rc.StreamingMode = agent.StreamingModeSSE
	}
	var tr turnResult
	for ev, err := range e.r.Run(t.Context(), "user", fmt.Sprintf("s%d", e.turnN), genai.NewContentFromText("look it up", genai.RoleUser), rc) {
		if err != nil {
			tr.err = err
			continue
		}
		tr.events = append(tr.events, ev)
		if ev.Content == nil {
			continue
		}
		if ev.Partial {
			for _, p := range ev.Content.Parts {
				tr.partials = append(tr.partials, p.Text)
			}
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				tr.final = ev
			}
		}
	}
	return tr
}

func (e *e2e) assertNothingPending(t *testing.T) {
	t.Helper()
	if n := e.m.Pending(); n != 0 {
		t.Errorf("failover Pending = %d", n)
	}
	if tk, inv := e.h.Pending(); tk != 0 || inv != 0 {
		t.Errorf("plugin pending = %d tickets, %d invocations", tk, inv)
	}
}

func breakerOf(t *testing.T, reg *registry.Registry, k registry.Key) *registry.Breaker {
	t.Helper()
	return mustBreaker(t, reg, k)
}

func TestGeminiPrimary503FallbackAnswersAndRunsTools(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "sse"}[stream], func(t *testing.T) {
			e := newE2E(t, testPolicy())
			e.primary.setDefault(reply{status: 503, body: body503})
			tr := e.turn(t, stream)
			if tr.err != nil {
				t.Fatal(tr.err)
			}
			if got := tr.text(); got != "answer from fallback-model" {
				t.Errorf("answer = %q", got)
			}
			if e.toolCalls.Load() != 1 {
				t.Errorf("tool calls = %d: the fallback's function call was not executed", e.toolCalls.Load())
			}
			method := ":generateContent"
			if stream {
				method = ":streamGenerateContent?alt=sse"
			}
			for _, p := range e.fallback.seenPaths() {
				if p != "/v1beta/models/fallback-model"+method {
					t.Errorf("fallback server saw %q: not its own model name", p)
				}
			}
			if tr.meta(failover.AttrEndpoint) != string(e.fKey) || tr.meta(failover.AttrFailoverFrom) != string(e.pKey) ||
				tr.meta(failover.AttrFailoverReason) != "server_error" {
				t.Errorf("event metadata = %v", tr.final.CustomMetadata)
			}
			if stream && len(tr.partials) == 0 {
				t.Error("no partial events: streaming lost on failover")
			}
			// Two model calls (tool call, then answer), both failed over.
			if n := e.logs.count("adkbreaker: model failover"); n != 2 {
				t.Errorf("%d failover lines:\n%s", n, e.logs)
			}
			e.assertNothingPending(t)
		})
	}
}

func TestGeminiOpenPrimaryStaysFlatThenOneProbeRecovers(t *testing.T) {
	e := newE2E(t, testPolicy())
	e.primary.setDefault(reply{status: 503, body: body503})
	tr := e.turn(t, false) // two model calls → two failures → open
	if tr.err != nil || tr.text() != "answer from fallback-model" {
		t.Fatalf("turn 1: %q %v", tr.text(), tr.err)
	}
	if st := breakerOf(t, e.reg, e.pKey).State(); st != registry.StateOpen {
		t.Fatalf("primary %s, want open", st)
	}
	flat := e.primary.hits.Load()
	for i := range 3 {
		tr := e.turn(t, i%2 == 1)
		if tr.err != nil || tr.text() != "answer from fallback-model" || tr.meta(failover.AttrFailoverReason) != "circuit_open" {
			t.Fatalf("open turn %d: %q %v meta=%v", i, tr.text(), tr.err, tr.final)
		}
	}
	if n := e.primary.hits.Load(); n != flat {
		t.Errorf("open primary received %d requests", n-flat)
	}
	// After the cool-down, exactly one probe reaches the still-failing
	// primary; it re-opens (hold doubled to 60s) and the turn carries on.
	e.clk.Advance(31 * time.Second)
	if tr := e.turn(t, false); tr.err != nil || tr.text() != "answer from fallback-model" {
		t.Fatalf("failed-probe turn: %q %v", tr.text(), tr.err)
	}
	if n := e.primary.hits.Load(); n != flat+1 {
		t.Errorf("primary hits in the probe turn = %d, want exactly 1 probe", n-flat)
	}
	if st := breakerOf(t, e.reg, e.pKey).State(); st != registry.StateOpen {
		t.Fatalf("primary %s after a failed probe, want open", st)
	}
	flat = e.primary.hits.Load()
	e.primary.setDefault(reply{})
	e.clk.Advance(61 * time.Second)
	tr = e.turn(t, false)
	if tr.err != nil || tr.text() != "answer from primary-model" || tr.meta(failover.AttrEndpoint) != string(e.pKey) {
		t.Fatalf("recovery turn: %q %v", tr.text(), tr.err)
	}
	// The first model call of the turn was the single probe; it closed the
	// breaker, and the second call went to the primary as usual.
	if n := e.primary.hits.Load(); n != flat+2 {
		t.Errorf("primary hits after recovery = %d, want 2 (probe, then closed)", n-flat)
	}
	if st := breakerOf(t, e.reg, e.pKey).State(); st != registry.StateClosed {
		t.Errorf("primary %s after a good probe", st)
	}
	e.assertNothingPending(t)
}

// A threshold trip holds for at least the server's retry hint: a 503 with
// a 30 s RetryInfo opens the breaker (consecutive_failures 1) for 30 s,
// not OpenFor's 5 s. (A 429 is a refusal, not a failure of the
// thresholds: TestGeminiSustained429OpensByTheFifthCall.)
func TestGeminiRetryDelayIsAFloor(t *testing.T) {
	p := testPolicy()
	p.ConsecutiveFailures = 1
	p.OpenFor = 5 * time.Second
	p.MaxOpenFor = 5 * time.Second
	e := newE2E(t, p)
	e.primary.script(reply{status: 503, body: strings.Replace(body429, `"code":429`, `"code":503`, 1)})
	tr := e.turn(t, false)
	if tr.err != nil || tr.text() != "answer from fallback-model" {
		t.Fatalf("turn 1: %q %v", tr.text(), tr.err)
	}
	if ra := breakerOf(t, e.reg, e.pKey).RetryAfter(); ra < 30*time.Second {
		t.Errorf("primary RetryAfter = %s, want ≥ 30s (the hint) although OpenFor is 5s", ra)
	}
	hits := e.primary.hits.Load()
	for _, step := range []time.Duration{6 * time.Second, 10 * time.Second, 13 * time.Second} { // +29s in all
		e.clk.Advance(step)
		if tr := e.turn(t, false); tr.text() != "answer from fallback-model" {
			t.Fatalf("within the hint: %q %v", tr.text(), tr.err)
		}
	}
	if n := e.primary.hits.Load(); n != hits {
		t.Errorf("primary called %d times within its retry delay", n-hits)
	}
	e.clk.Advance(2 * time.Second)
	if tr := e.turn(t, false); tr.text() != "answer from primary-model" {
		t.Errorf("after the hint: %q %v", tr.text(), tr.err)
	}
	e.assertNothingPending(t)
}

func TestGeminiRetryAfterHeaderViaTransport(t *testing.T) {
	// With trip_on_retry_hint the header's hint opens the breaker for it:
	// the transport's capture reaches the registry.
	e := newE2E(t, tripOnHint(failover.DefaultPolicy()))
	e.primary.script(reply{status: 503, body: body503, header: http.Header{"Retry-After": {"20"}}})
	if tr := e.turn(t, false); tr.text() != "answer from fallback-model" {
		t.Fatalf("turn 1: %q %v", tr.text(), tr.err)
	}
	st := e.m.Status()[0]
	if st.Hold != 20*time.Second || st.HoldReason != failover.ReasonServerError {
		t.Errorf("hold = %s %q, want 20s from the Retry-After header", st.Hold, st.HoldReason)
	}
	if !strings.Contains(e.logs.String(), "retry_after=20s") {
		t.Errorf("log lacks retry_after=20s:\n%s", e.logs)
	}
	// The hold is the registry's too: the breaker is open for the hint, so
	// snapshots, notifications and telemetry show it.
	if b := breakerOf(t, e.reg, e.pKey); b.State() != registry.StateOpen || b.RetryAfter() != 20*time.Second {
		t.Errorf("primary breaker: %v, retry after %s; want open for the 20s hint", b.State(), b.RetryAfter())
	}
}

func TestGeminiDailyQuotaFailsOverAtOnce(t *testing.T) {
	p := failover.DefaultPolicy() // 10 consecutive failures: a per-day quota must not wait for them
	p.MaxRetryHint = 24 * time.Hour
	e := newE2E(t, p)
	e.clk.Set(time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC))
	e.primary.setDefault(reply{status: 429, body: bodyDay})
	tr := e.turn(t, false)
	if tr.err != nil || tr.text() != "answer from fallback-model" || tr.meta(failover.AttrFailoverReason) != "quota_exhausted" {
		t.Fatalf("turn: %q %v", tr.text(), tr.err)
	}
	if n := e.primary.hits.Load(); n != 1 {
		t.Errorf("primary hits = %d, want 1 (then held, not retried)", n)
	}
	if st := e.m.Status()[0]; st.Hold != 4*time.Hour {
		t.Errorf("hold = %s, want 4h (until midnight UTC)", st.Hold)
	}
	e.clk.Advance(3 * time.Hour)
	e.turn(t, true)
	if n := e.primary.hits.Load(); n != 1 {
		t.Errorf("primary hits = %d during the daily hold", n)
	}
	e.assertNothingPending(t)
}

func TestGeminiStreamFailingAfterFirstChunkDoesNotSwitch(t *testing.T) {
	e := newE2E(t, testPolicy())
	e.primary.setDefault(reply{chunks: []string{"Partial answ"},
		sseErr: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`})
	tr := e.turn(t, true)
	var api genai.APIError
	if tr.err == nil || !errors.As(tr.err, &api) || api.Code != 503 {
		t.Fatalf("turn error = %v, want the primary's mid-stream 503", tr.err)
	}
	if len(tr.partials) != 1 || tr.partials[0] != "Partial answ" {
		t.Errorf("partials = %q", tr.partials)
	}
	if n := e.fallback.hits.Load(); n != 0 {
		t.Errorf("fallback hits = %d: switched endpoints silently mid-stream", n)
	}
	if !strings.Contains(e.logs.String(), "not failing over") {
		t.Errorf("mid-stream failure not logged:\n%s", e.logs)
	}
	e.assertNothingPending(t)
}

func TestGeminiAllOpenPluginEndsTurnReadably(t *testing.T) {
	e := newE2E(t, testPolicy(), failover.WithErrorWhenUnavailable())
	e.primary.setDefault(reply{status: 503, body: body503})
	e.fallback.setDefault(reply{status: 503, body: body503})
	for range 2 { // a failed model call ends the turn: two turns, two failures each → both open
		if tr := e.turn(t, false); !errors.Is(tr.err, failover.ErrUnavailable) {
			t.Fatalf("turn error = %v", tr.err)
		}
	}
	for _, k := range []registry.Key{e.pKey, e.fKey} {
		if st := breakerOf(t, e.reg, k).State(); st != registry.StateOpen {
			t.Fatalf("%s %s", k, st)
		}
	}
	hits := e.primary.hits.Load() + e.fallback.hits.Load()
	tr := e.turn(t, false)
	if tr.err != nil {
		t.Fatalf("turn with every endpoint open failed: %v", tr.err)
	}
	if tr.final == nil || tr.final.Content.Role != genai.RoleModel || !strings.Contains(tr.text(), "temporarily unavailable") ||
		!strings.Contains(tr.text(), "30 seconds") {
		t.Errorf("final = %q, want a readable model message", tr.text())
	}
	if n := e.primary.hits.Load() + e.fallback.hits.Load(); n != hits {
		t.Errorf("%d requests reached open endpoints", n-hits)
	}
	e.assertNothingPending(t)
}

func TestGeminiNothingPendingAfterErrorsBreaksAndStreams(t *testing.T) {
	e := newE2E(t, testPolicy(), failover.WithErrorWhenUnavailable())
	// Model errors: both endpoints fail (the turn fails).
	e.primary.script(reply{status: 503, body: body503})
	e.fallback.script(reply{status: 500, body: `{"error":{"code":500,"message":"internal","status":"INTERNAL"}}`})
	if tr := e.turn(t, false); tr.err == nil {
		t.Error("expected the turn to fail")
	}
	e.assertNothingPending(t)
	// A 400: no failover, the turn fails with it.
	e.primary.script(reply{status: 400, body: `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`})
	if tr := e.turn(t, true); tr.err == nil {
		t.Error("expected the turn to fail")
	}
	e.assertNothingPending(t)
	// Early break of the runner's iterator, mid-stream.
	e.primary.script(reply{chunks: []string{"a", "b", "c"}})
	for ev, err := range e.r.Run(t.Context(), "user", "break", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
		if err != nil || ev.Partial {
			break
		}
	}
	e.assertNothingPending(t)
	// Streaming turns, with a tool call.
	for range 3 {
		if tr := e.turn(t, true); tr.err != nil {
			t.Fatal(tr.err)
		}
	}
	e.assertNothingPending(t)
	if c := breakerOf(t, e.reg, e.pKey).Counts(); c.Requests == 0 {
		t.Errorf("primary counts = %+v", c)
	}
}

func TestGeminiPluginFromNew(t *testing.T) {
	// The brief's assembly: breaker.New with the shared registry and the
	// failover Model as guard.
	clearGenaiEnv(t)
	fb := newFakeGemini(t)
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "fallback-model", Backend: config.BackendGeminiAPI, BaseURL: fb.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"},
	}}
	reg := registry.MustNew(failover.ChainPolicyOptions(chain)...)
	m, err := failover.FromConfig(context.Background(), "solo", chain, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithModelGuard(m))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := llmagent.New(llmagent.Config{Name: "solo_agent", Model: m})
	r, _ := runner.New(runner.Config{AppName: "x", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	fb.setDefault(reply{chunks: []string{"hello"}})
	var text string
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Content != nil && len(ev.Content.Parts) > 0 {
			text = ev.Content.Parts[0].Text
		}
	}
	if text != "hello" {
		t.Errorf("text = %q", text)
	}
}

// TestGeminiFirstTurnAnswersReadablyByDefault: on the first turn every
// endpoint is still closed and fails in turn, so the plugin cannot end the
// turn beforehand; the user still gets a readable answer, not an error,
// unless WithErrorWhenUnavailable asks for the error.
func TestGeminiFirstTurnAnswersReadablyByDefault(t *testing.T) {
	for _, keepError := range []bool{false, true} {
		t.Run(fmt.Sprintf("error=%v", keepError), func(t *testing.T) {
			var opts []failover.Option
			if keepError {
				opts = append(opts, failover.WithErrorWhenUnavailable())
			}
			e := newE2E(t, testPolicy(), opts...)
			e.primary.setDefault(reply{status: 503, body: body503})
			e.fallback.setDefault(reply{status: 503, body: body503})
			tr := e.turn(t, false)
			if keepError {
				if !errors.Is(tr.err, failover.ErrUnavailable) {
					t.Fatalf("turn error = %v, want ErrUnavailable", tr.err)
				}
				return
			}
			if tr.err != nil {
				t.Fatalf("first turn failed: %v", tr.err)
			}
			if tr.final == nil || tr.final.Content.Role != genai.RoleModel || !strings.Contains(tr.text(), "temporarily unavailable") {
				t.Errorf("final = %q, want a readable model message", tr.text())
			}
			if e.primary.hits.Load() == 0 || e.fallback.hits.Load() == 0 {
				t.Errorf("hits = %d, %d: both endpoints should have been tried", e.primary.hits.Load(), e.fallback.hits.Load())
			}
			e.assertNothingPending(t)
		})
	}
}
