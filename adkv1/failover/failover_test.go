package failover_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestNewReportsEveryProblem(t *testing.T) {
	reg := registry.MustNew()
	a := newFake("a", answer("x"))
	_, err := failover.New("", nil, nil)
	for _, want := range []string{"name: must not be empty", "registry: must not be nil", "at least one endpoint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(empty): error %v does not mention %q", err, want)
		}
	}
	_, err = failover.New("chat", reg, []failover.Endpoint{
		{LLM: a, Key: "k"},
		{LLM: nil, ModelName: "b"},
		{LLM: a, Key: "k"},
		{LLM: a, Key: "bad\nkey", Timeout: -time.Second},
	})
	for _, want := range []string{"endpoints[1].llm: required", "endpoints[2].key: duplicate of endpoints[0]", "endpoints[3].key", "endpoints[3].timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	m, err := failover.New("chat", reg, []failover.Endpoint{{LLM: a}}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Keys()[0]; got != "model:a@gemini_api/" {
		t.Errorf("derived key = %q", got)
	}
}

func TestPrimaryAnswersWithClonedRequest(t *testing.T) {
	e := newEnv(t, testPolicy())
	req := userReq("hi")
	req.Config = &genai.GenerateContentConfig{Temperature: genai.Ptr[float32](0.5), HTTPOptions: &genai.HTTPOptions{}}
	r := run(t.Context(), e.m, req, false)
	if err := r.err(); err != nil {
		t.Fatal(err)
	}
	if got := r.text(); got != "from primary" {
		t.Errorf("text = %q", got)
	}
	if got := e.primary.seenModels(); len(got) != 1 || got[0] != "primary-model" {
		t.Errorf("primary saw models %q, want its own name", got)
	}
	// The endpoint's mutations stayed on its clone.
	if req.Model != "chat" || len(req.Contents) != 1 || req.Config.HTTPOptions.Headers != nil {
		t.Errorf("caller's request mutated: model=%q contents=%d headers=%v", req.Model, len(req.Contents), req.Config.HTTPOptions.Headers)
	}
	last := r.last()
	if meta(last, failover.AttrEndpoint) != string(primaryKey) || meta(last, failover.AttrEndpointModel) != "primary-model" {
		t.Errorf("metadata = %v", last.CustomMetadata)
	}
	if meta(last, failover.AttrFailoverFrom) != nil {
		t.Errorf("failover keys without a failover: %v", last.CustomMetadata)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestFailoverOnServerErrorBeforeFirstChunk(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "sse"}[stream], func(t *testing.T) {
			e := newEnv(t, testPolicy())
			e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
			e.fall.setDefault(answer("fall", "back"))
			req := userReq("hi")
			r := run(t.Context(), e.m, req, stream)
			if err := r.err(); err != nil {
				t.Fatal(err)
			}
			if r.text() != "fallback" {
				t.Errorf("text = %q", r.text())
			}
			if got := e.fall.seenModels(); len(got) != 1 || got[0] != "fallback-model" {
				t.Errorf("fallback saw models %q, want its own name", got)
			}
			for _, resp := range r.resps { // partials too
				if meta(resp, failover.AttrEndpoint) != string(fallbackKey) || meta(resp, failover.AttrFailoverFrom) != string(primaryKey) ||
					meta(resp, failover.AttrFailoverReason) != "server_error" {
					t.Errorf("metadata = %v", resp.CustomMetadata)
				}
			}
			if c := mustBreaker(t, e.reg, primaryKey).Counts(); c.Failures != 1 {
				t.Errorf("primary counts = %+v, want 1 failure", c)
			}
			if n := e.logs.count("adkbreaker: model failover"); n != 1 {
				t.Errorf("%d failover lines:\n%s", n, e.logs)
			}
			for _, want := range []string{"from=" + string(primaryKey), "to=" + string(fallbackKey), "reason=server_error", "retry_after=0s"} {
				if !strings.Contains(e.logs.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, e.logs)
				}
			}
			if e.m.Pending() != 0 {
				t.Errorf("Pending = %d", e.m.Pending())
			}
		})
	}
}

func mustBreaker(t *testing.T, reg *registry.Registry, k registry.Key) *registry.Breaker {
	t.Helper()
	b, err := reg.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNoFailoverForRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want registry.Outcome
	}{
		{"400", apiErr(400, "INVALID_ARGUMENT"), registry.Excluded},
		{"404", apiErr(404, "NOT_FOUND"), registry.Excluded},
		{"prompt blocked", errors.New("empty response"), registry.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, testPolicy())
			e.primary.setDefault(step{err: tc.err})
			r := run(t.Context(), e.m, userReq("hi"), false)
			// genai.APIError is not comparable (==, errors.Is panic): compare text.
			if len(r.errs) != 1 || r.errs[0].Error() != tc.err.Error() {
				t.Fatalf("errs = %v, want the endpoint's error as it is", r.errs)
			}
			if e.fall.calls.Load() != 0 {
				t.Error("failed over on an error another endpoint would repeat")
			}
			c := mustBreaker(t, e.reg, primaryKey).Counts()
			got := map[registry.Outcome]uint32{registry.Success: c.Successes, registry.Failure: c.Failures, registry.Excluded: c.Exclusions}
			if got[tc.want] != 1 || c.Failures+c.Successes+c.Exclusions != 1 {
				t.Errorf("counts = %+v, want one %s", c, tc.want)
			}
			if e.m.Pending() != 0 {
				t.Errorf("Pending = %d", e.m.Pending())
			}
		})
	}
}

func TestSafetyBlockIsAnAnswer(t *testing.T) {
	e := newEnv(t, testPolicy())
	blocked := &model.LLMResponse{ErrorCode: "SAFETY", FinishReason: genai.FinishReasonSafety}
	m := &staticLLM{name: "primary-model", resp: blocked}
	mm := failover.MustNew("chat", e.reg, []failover.Endpoint{{LLM: m, Key: "model:s@x/"}, {LLM: e.fall, Key: fallbackKey}}, failover.WithLogger(e.logs.logger()))
	defer mm.Close()
	r := run(t.Context(), mm, userReq("hi"), false)
	if r.err() != nil || r.last().FinishReason != genai.FinishReasonSafety || e.fall.calls.Load() != 0 {
		t.Errorf("safety block: resps=%v errs=%v fallback calls=%d", r.resps, r.errs, e.fall.calls.Load())
	}
	if c := mustBreaker(t, e.reg, "model:s@x/").Counts(); c.Successes != 1 {
		t.Errorf("counts = %+v, want a success", c)
	}
}

type staticLLM struct {
	name string
	resp *model.LLMResponse
}

func (s *staticLLM) Name() string { return s.name }
func (s *staticLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		r := *s.resp
		yield(&r, nil)
	}
}

func TestCallerCancellationIsExcludedAndNotFailedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, testPolicy())
		e.primary.setDefault(step{waitCtx: true})
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel() }() // virtual time
		r := run(ctx, e.m, userReq("hi"), false)
		if len(r.errs) != 1 || !errors.Is(r.errs[0], context.Canceled) {
			t.Fatalf("errs = %v", r.errs)
		}
		if e.fall.calls.Load() != 0 {
			t.Error("failed over after the caller cancelled")
		}
		if c := mustBreaker(t, e.reg, primaryKey).Counts(); c.Exclusions != 1 || c.Failures != 0 {
			t.Errorf("counts = %+v, want one exclusion", c)
		}
	})
}

func TestOwnTimeoutIsAFailureAndFailsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, testPolicy())
		e.primary.setDefault(step{waitCtx: true})
		m := failover.MustNew("chat2", e.reg, []failover.Endpoint{
			{LLM: e.primary, Key: primaryKey, Timeout: 20 * time.Second},
			{LLM: e.fall, Key: fallbackKey},
		}, failover.WithLogger(e.logs.logger()))
		defer m.Close()
		start := time.Now()
		r := run(t.Context(), m, userReq("hi"), false)
		if r.err() != nil || r.text() != "from fallback" {
			t.Fatalf("text=%q errs=%v", r.text(), r.errs)
		}
		if d := time.Since(start); d != 20*time.Second {
			t.Errorf("failed over after %s, want the 20s timeout", d)
		}
		if meta(r.last(), failover.AttrFailoverReason) != "timeout" {
			t.Errorf("metadata = %v", r.last().CustomMetadata)
		}
		if c := mustBreaker(t, e.reg, primaryKey).Counts(); c.Failures != 1 {
			t.Errorf("counts = %+v, want one failure", c)
		}
	})
}

func TestTimeoutBoundsOnlyTheFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, testPolicy())
		release := make(chan struct{})
		slow := &slowStream{first: "a", rest: "b", release: release}
		m := failover.MustNew("chat2", e.reg, []failover.Endpoint{
			{LLM: slow, Key: primaryKey, Timeout: 30 * time.Second},
			{LLM: e.fall, Key: fallbackKey},
		}, failover.WithLogger(e.logs.logger()))
		defer m.Close()
		go func() { time.Sleep(80 * time.Second); close(release) }()
		r := run(t.Context(), m, userReq("hi"), true)
		if r.err() != nil || r.text() != "ab" {
			t.Fatalf("text=%q errs=%v: a stream that started must outlive the first-chunk timeout", r.text(), r.errs)
		}
	})
}

// slowStream yields its first chunk at once and the rest when released.
type slowStream struct {
	first, rest string
	release     chan struct{}
}

func (s *slowStream) Name() string { return "slow" }
func (s *slowStream) GenerateContent(ctx context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if !yield(&model.LLMResponse{Content: genai.NewContentFromText(s.first, genai.RoleModel), Partial: true}, nil) {
			return
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText(s.first+s.rest, genai.RoleModel)}, nil)
	}
}

func TestMidStreamFailureIsReportedNotSwitched(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(step{chunks: []string{"Hel"}, err: apiErr(503, "UNAVAILABLE")})
	r := run(t.Context(), e.m, userReq("hi"), true)
	if len(r.resps) != 1 || !r.resps[0].Partial || len(r.errs) != 1 {
		t.Fatalf("resps=%d errs=%v", len(r.resps), r.errs)
	}
	var api genai.APIError
	if !errors.As(r.errs[0], &api) || api.Code != 503 {
		t.Errorf("error %v is not the endpoint's 503 as it is", r.errs[0])
	}
	if e.fall.calls.Load() != 0 {
		t.Error("switched endpoints mid-stream")
	}
	if c := mustBreaker(t, e.reg, primaryKey).Counts(); c.Failures != 1 {
		t.Errorf("counts = %+v, want the mid-stream failure counted", c)
	}
	if !strings.Contains(e.logs.String(), "not failing over") {
		t.Errorf("mid-stream failure not logged:\n%s", e.logs)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestConsumerBreak(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(answer("a", "b", "c"))
	// After a partial chunk: not the endpoint's fault, nor a success.
	for range e.m.GenerateContent(t.Context(), userReq("hi"), true) {
		break
	}
	// After a complete unary answer: the endpoint did its job.
	for range e.m.GenerateContent(t.Context(), userReq("hi"), false) {
		break
	}
	c := mustBreaker(t, e.reg, primaryKey).Counts()
	if c.Exclusions != 1 || c.Successes != 1 || c.Failures != 0 {
		t.Errorf("counts = %+v, want 1 exclusion (stream break) and 1 success (unary break)", c)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestPanicsLeaveNothingPending(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(step{panic: true})
	func() {
		defer func() { _ = recover() }()
		run(t.Context(), e.m, userReq("hi"), false)
	}()
	e.primary.setDefault(answer("a", "b"))
	func() {
		defer func() { _ = recover() }()
		for range e.m.GenerateContent(t.Context(), userReq("hi"), true) {
			panic("consumer panic")
		}
	}()
	c := mustBreaker(t, e.reg, primaryKey).Counts()
	if c.Failures != 1 || c.Exclusions != 1 {
		t.Errorf("counts = %+v, want 1 failure (endpoint panic) and 1 exclusion (consumer panic)", c)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestBreakerOpensSkipsAndProbesBack(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(step{err: apiErr(500, "INTERNAL")})
	for range 2 {
		if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from fallback" {
			t.Fatalf("text = %q, errs %v", r.text(), r.errs)
		}
	}
	if st := mustBreaker(t, e.reg, primaryKey).State(); st != registry.StateOpen {
		t.Fatalf("primary %s, want open", st)
	}
	before := e.primary.calls.Load()
	for range 3 {
		r := run(t.Context(), e.m, userReq("hi"), false)
		if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "circuit_open" {
			t.Fatalf("text=%q meta=%v", r.text(), r.last().CustomMetadata)
		}
	}
	if n := e.primary.calls.Load(); n != before {
		t.Errorf("open primary called %d times", n-before)
	}
	e.primary.setDefault(answer("from primary"))
	e.clk.Advance(31 * time.Second)
	if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
		t.Fatalf("probe: text %q", r.text())
	}
	if n := e.primary.calls.Load(); n != before+1 {
		t.Errorf("probe: primary called %d times, want 1", n-before)
	}
	if st := mustBreaker(t, e.reg, primaryKey).State(); st != registry.StateClosed {
		t.Errorf("after a good probe: %s", st)
	}
}

func TestHalfOpenAdmitsOneProbeWhileOthersFailOver(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	for range 2 {
		run(t.Context(), e.m, userReq("hi"), false)
	}
	e.clk.Advance(31 * time.Second)
	release := make(chan struct{})
	probing := make(chan struct{}, 1)
	e.primary.setDefault(step{block: release, entered: probing, chunks: []string{"from primary"}})
	probeDone := make(chan result)
	go func() { probeDone <- run(context.Background(), e.m, userReq("probe"), false) }()
	<-probing // the probe is in the primary (a wall-clock poll could time out under load)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := run(context.Background(), e.m, userReq("x"), false); r.text() != "from fallback" {
				t.Errorf("during the probe: %q %v", r.text(), r.errs)
			}
		}()
	}
	wg.Wait()
	if e.m.Pending() != 1 {
		t.Errorf("Pending during the probe = %d, want 1", e.m.Pending())
	}
	close(release)
	if r := <-probeDone; r.text() != "from primary" {
		t.Errorf("probe answered %q %v", r.text(), r.errs)
	}
	if n := e.primary.calls.Load(); n != 3 {
		t.Errorf("primary calls = %d, want exactly one probe", n)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestRetryInfoIsACoolDownFloor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pol    func(*registry.Policy)
		err    error
		reason string
	}{
		// A 503 with a hint trips by the failure threshold (a 429 is a
		// refusal, counted by the exhaustion streak, not the thresholds).
		{"breaker trips", func(p *registry.Policy) {
			p.ConsecutiveFailures = 1
			p.OpenFor = 5 * time.Second
			p.MaxOpenFor = 5 * time.Second
		}, apiErr(503, "UNAVAILABLE", retryInfo("30s")), "server_error"},
		{"trip_on_retry_hint", func(p *registry.Policy) {
			*p = tripOnHint(*p)
			p.ConsecutiveFailures = 100
			p.OpenFor = 5 * time.Second
		}, apiErr(429, "RESOURCE_EXHAUSTED", retryInfo("30s")), "rate_limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			tc.pol(&p)
			e := newEnv(t, p)
			e.primary.script(step{err: tc.err})
			r := run(t.Context(), e.m, userReq("hi"), false)
			if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != tc.reason {
				t.Fatalf("text=%q meta=%v errs=%v", r.text(), r.last().CustomMetadata, r.errs)
			}
			if !strings.Contains(e.logs.String(), "retry_after=30s") {
				t.Errorf("log lacks retry_after=30s:\n%s", e.logs)
			}
			for _, at := range []time.Duration{5 * time.Second, 10 * time.Second, 29 * time.Second} {
				e.clk.Set(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(at))
				r := run(t.Context(), e.m, userReq("hi"), false)
				if r.text() != "from fallback" || e.primary.calls.Load() != 1 {
					t.Fatalf("at +%s: text=%q primary calls=%d (OpenFor is 5s; the hint says 30s)", at, r.text(), e.primary.calls.Load())
				}
			}
			down, ra := e.m.ModelUnavailable("chat")
			if down || ra != 0 {
				t.Errorf("ModelUnavailable = %v, %s with a healthy fallback", down, ra)
			}
			e.clk.Advance(2 * time.Second)
			if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
				t.Errorf("after 31s: %q", r.text())
			}
		})
	}
}

func TestDailyQuotaHoldsUntilMidnight(t *testing.T) {
	p := failover.DefaultPolicy()
	p.MaxRetryHint = 24 * time.Hour
	e := newEnv(t, p)
	e.clk.Set(time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC))
	e.primary.script(step{err: apiErr(429, "RESOURCE_EXHAUSTED", dailyQuota(), retryInfo("39s"))})
	r := run(t.Context(), e.m, userReq("hi"), false)
	if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "quota_exhausted" {
		t.Fatalf("text=%q meta=%v", r.text(), r.last().CustomMetadata)
	}
	st := e.m.Status()[0]
	if st.Hold != 4*time.Hour || st.HoldReason != failover.ReasonQuotaExhausted {
		t.Errorf("hold = %s %q, want 4h quota_exhausted (until midnight UTC)", st.Hold, st.HoldReason)
	}
	e.clk.Advance(3*time.Hour + 59*time.Minute)
	if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from fallback" || e.primary.calls.Load() != 1 {
		t.Errorf("before midnight: %q, primary calls %d", r.text(), e.primary.calls.Load())
	}
	e.clk.Advance(2 * time.Minute)
	if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
		t.Errorf("after midnight: %q", r.text())
	}
}

func TestDailyQuotaHoldIsCappedByMaxRetryHint(t *testing.T) {
	e := newEnv(t, failover.DefaultPolicy()) // MaxRetryHint 1h
	e.clk.Set(time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC))
	e.primary.script(step{err: apiErr(429, "RESOURCE_EXHAUSTED", dailyQuota())})
	run(t.Context(), e.m, userReq("hi"), false)
	if st := e.m.Status()[0]; st.Hold != time.Hour {
		t.Errorf("hold = %s, want the 1h cap", st.Hold)
	}
}

func TestAllUnavailable(t *testing.T) {
	e := newEnv(t, testPolicy())
	for _, k := range []registry.Key{primaryKey, fallbackKey} {
		if err := e.reg.Isolate(k); err != nil {
			t.Fatal(err)
		}
	}
	down, ra := e.m.ModelUnavailable("chat")
	if !down || ra <= 0 {
		t.Errorf("ModelUnavailable = %v, %s", down, ra)
	}
	if d, _ := e.m.ModelUnavailable("other-model"); d {
		t.Error("guard answered for another model's name")
	}
	r := run(t.Context(), e.m, userReq("hi"), false)
	if len(r.errs) != 1 || !errors.Is(r.errs[0], failover.ErrUnavailable) || !errors.Is(r.errs[0], registry.ErrOpen) {
		t.Fatalf("errs = %v", r.errs)
	}
	if e.primary.calls.Load()+e.fall.calls.Load() != 0 {
		t.Error("an isolated endpoint was called")
	}

	e2 := newEnv(t, testPolicy(), failover.WithAnswerWhenUnavailable())
	_ = e2.reg.Isolate(primaryKey)
	e2.fall.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	r = run(t.Context(), e2.m, userReq("hi"), false)
	last := r.last()
	if r.err() != nil || last == nil || last.Content.Role != genai.RoleModel || !strings.Contains(r.text(), "temporarily unavailable") {
		t.Fatalf("want a readable model answer, got %v %v", r.resps, r.errs)
	}
	if meta(last, failover.AttrUnavailable) != true {
		t.Errorf("metadata = %v", last.CustomMetadata)
	}
}

func TestChainErrorUnwrapsToEndpointErrors(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	e.fall.setDefault(step{err: apiErr(429, "RESOURCE_EXHAUSTED")})
	r := run(t.Context(), e.m, userReq("hi"), false)
	var fe *failover.Error
	if len(r.errs) != 1 || !errors.As(r.errs[0], &fe) {
		t.Fatalf("errs = %v", r.errs)
	}
	var api genai.APIError
	if !errors.As(r.errs[0], &api) || api.Code != 503 {
		t.Errorf("errors.As(APIError) = %v", api)
	}
	if errors.Is(r.errs[0], registry.ErrOpen) {
		t.Error("Is(ErrOpen) although endpoints were called")
	}
	if len(fe.Attempts) != 2 || fe.Attempts[0].Reason != failover.ReasonServerError || fe.Attempts[1].Reason != failover.ReasonRateLimited {
		t.Errorf("attempts = %+v", fe.Attempts)
	}
	if !strings.Contains(e.logs.String(), "no model endpoint could answer") {
		t.Errorf("exhaustion not logged:\n%s", e.logs)
	}
	if e.m.Pending() != 0 {
		t.Errorf("Pending = %d", e.m.Pending())
	}
}

func TestMetadataKeepsExistingKeys(t *testing.T) {
	e := newEnv(t, testPolicy())
	shared := map[string]any{"mine": 1, failover.AttrEndpoint: "set by the endpoint"}
	e.primary.setDefault(step{chunks: []string{"x"}, meta: shared})
	r := run(t.Context(), e.m, userReq("hi"), false)
	md := r.last().CustomMetadata
	if md["mine"] != 1 || md[failover.AttrEndpoint] != "set by the endpoint" || md[failover.AttrEndpointModel] != "primary-model" {
		t.Errorf("metadata = %v", md)
	}
	if len(shared) != 2 {
		t.Errorf("the endpoint's map was written: %v", shared)
	}
}

func TestGoogleLLMVariantFollowsTheFirstAvailableEndpoint(t *testing.T) {
	e := newEnv(t, testPolicy())
	e.fall.backend = genai.BackendVertexAI
	if v := e.m.GetGoogleLLMVariant(); v != genai.BackendGeminiAPI {
		t.Errorf("variant = %v", v)
	}
	_ = e.reg.Isolate(primaryKey)
	if v := e.m.GetGoogleLLMVariant(); v != genai.BackendVertexAI {
		t.Errorf("variant with the primary open = %v, want the fallback's", v)
	}
}

func TestResetEndsHold(t *testing.T) {
	e := newEnv(t, tripOnHint(testPolicy()))
	e.primary.script(step{err: apiErr(429, "RESOURCE_EXHAUSTED", retryInfo("60s"))})
	run(t.Context(), e.m, userReq("hi"), false)
	if e.m.Status()[0].Hold == 0 {
		t.Fatal("no hold")
	}
	e.reg.Reset(primaryKey)
	if err := e.reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := e.m.Status()[0]; st.Hold != 0 {
		t.Errorf("hold after an operator reset = %s", st.Hold)
	}
	if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
		t.Errorf("after reset: %q", r.text())
	}
}

func TestDefaultPolicyWarning(t *testing.T) {
	var logs logBuf
	reg := registry.MustNew()
	m := failover.MustNew("chat", reg, []failover.Endpoint{{LLM: newFake("a", step{}), Key: "k1"}}, failover.WithLogger(logs.logger()))
	m.Close()
	if !strings.Contains(logs.String(), "trips more easily than failover.DefaultPolicy()") || !strings.Contains(logs.String(), "trip_on_retry_hint=false") {
		t.Errorf("no warning for the registry default policy (its thresholds; it does not trip on a hint):\n%s", logs.String())
	}
	// A default policy as safe as DefaultPolicy but for trip_on_retry_hint:
	// true (one 429 would demote every user) is still warned about.
	var hinted logBuf
	reg = registry.MustNew(registry.WithDefaultPolicy(tripOnHint(failover.DefaultPolicy())))
	failover.MustNew("chat", reg, []failover.Endpoint{{LLM: newFake("a", step{}), Key: "k1"}}, failover.WithLogger(hinted.logger())).Close()
	if !strings.Contains(hinted.String(), "trips more easily than failover.DefaultPolicy()") || !strings.Contains(hinted.String(), "trip_on_retry_hint=true") {
		t.Errorf("no warning for a default policy with trip_on_retry_hint: true:\n%s", hinted.String())
	}
	var quiet logBuf
	reg = registry.MustNew(failover.PolicyOptions("k1")...)
	failover.MustNew("chat", reg, []failover.Endpoint{{LLM: newFake("a", step{}), Key: "k1"}}, failover.WithLogger(quiet.logger())).Close()
	if quiet.String() != "" {
		t.Errorf("warning despite DefaultPolicy: %s", quiet.String())
	}
}

func TestOnFailoverHook(t *testing.T) {
	var got []failover.Event
	e := newEnv(t, testPolicy(), failover.WithOnFailover(func(_ context.Context, ev failover.Event) { got = append(got, ev) }))
	e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	run(t.Context(), e.m, userReq("hi"), false)
	if len(got) != 1 || got[0].From != primaryKey || got[0].To != fallbackKey || got[0].Reason != failover.ReasonServerError || got[0].Err == nil {
		t.Errorf("events = %+v", got)
	}
}

func TestFailoverLogIsRateLimited(t *testing.T) {
	e := newEnv(t, testPolicy(), failover.WithLogInterval(10*time.Second))
	e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	for range 5 {
		run(t.Context(), e.m, userReq("hi"), false)
		e.primary.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	}
	// Five failovers in the same second: the breaker opens after 2, so the
	// hops are server_error ×2 and circuit_open ×3, one line per reason.
	if n := e.logs.count("adkbreaker: model failover"); n != 2 {
		t.Errorf("%d lines, want 2:\n%s", n, e.logs)
	}
	e.clk.Advance(11 * time.Second)
	run(t.Context(), e.m, userReq("hi"), false)
	if !strings.Contains(e.logs.String(), "suppressed=2") {
		t.Errorf("no suppressed count:\n%s", e.logs)
	}
}

// rudeLLM keeps yielding after its consumer said stop.
type rudeLLM struct{}

func (rudeLLM) Name() string { return "rude" }
func (rudeLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for range 3 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("x", genai.RoleModel), Partial: true}, nil)
		}
	}
}

func TestEndpointIgnoringStopDoesNotReachTheConsumer(t *testing.T) {
	e := newEnv(t, testPolicy())
	m := failover.MustNew("chat", e.reg, []failover.Endpoint{{LLM: rudeLLM{}, Key: primaryKey}}, failover.WithLogger(e.logs.logger()))
	defer m.Close()
	n := 0
	for range m.GenerateContent(t.Context(), userReq("hi"), true) {
		n++
		break // a range loop would panic if yield were called again
	}
	if n != 1 || m.Pending() != 0 {
		t.Errorf("n=%d pending=%d", n, m.Pending())
	}
}

// flakyLLM fails every other call with a 503, or streams.
type flakyLLM struct{ n atomic.Int64 }

func (f *flakyLLM) Name() string { return "flaky" }
func (f *flakyLLM) GenerateContent(_ context.Context, _ *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	i := f.n.Add(1)
	return func(yield func(*model.LLMResponse, error) bool) {
		switch i % 4 {
		case 0:
			yield(nil, apiErr(503, "UNAVAILABLE"))
		case 1:
			if yield(&model.LLMResponse{Content: genai.NewContentFromText("a", genai.RoleModel), Partial: true}, nil) {
				yield(nil, apiErr(500, "INTERNAL"))
			}
		default:
			yield(&model.LLMResponse{Content: genai.NewContentFromText("ok", genai.RoleModel)}, nil)
		}
	}
}

func TestConcurrentCallsLeaveNothingPending(t *testing.T) {
	e := newEnv(t, testPolicy())
	m := failover.MustNew("chat", e.reg, []failover.Endpoint{
		{LLM: &flakyLLM{}, Key: primaryKey}, {LLM: &flakyLLM{}, Key: fallbackKey},
	}, failover.WithLogger(e.logs.logger()))
	defer m.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := 0
				for range m.GenerateContent(context.Background(), userReq("x"), (g+i)%2 == 0) {
					n++
					if i%7 == 0 {
						break
					}
				}
				if i%50 == 0 {
					e.clk.Advance(31 * time.Second) // let the breakers probe again
				}
			}
		}()
	}
	wg.Wait()
	if m.Pending() != 0 {
		t.Errorf("Pending = %d", m.Pending())
	}
	for _, k := range []registry.Key{primaryKey, fallbackKey} {
		if n := mustBreaker(t, e.reg, k).PendingProbes(); n != 0 {
			t.Errorf("%s: %d probes pending", k, n)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	reg := registry.MustNew()
	_, err := failover.New("chat", reg, []failover.Endpoint{{LLM: newFake("a", step{}), Key: "k"}},
		failover.WithLogger(nil), failover.WithClassifier(nil), failover.WithDailyQuotaReset(nil),
		failover.WithOnFailover(nil), failover.WithBaseTransport(nil), nil)
	for _, want := range []string{"logger", "classifier", "daily quota reset", "on failover", "base transport", "nil option"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestDailyQuotaResetZoneAndNoMetadata(t *testing.T) {
	p := failover.DefaultPolicy()
	p.MaxRetryHint = 24 * time.Hour
	e := newEnv(t, p, failover.WithDailyQuotaReset(time.FixedZone("PST", -8*3600)), failover.WithoutResponseMetadata())
	e.clk.Set(time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)) // 12:00 PST
	e.primary.script(step{err: apiErr(429, "RESOURCE_EXHAUSTED", dailyQuota())})
	r := run(t.Context(), e.m, userReq("hi"), false)
	if r.text() != "from fallback" || r.last().CustomMetadata != nil {
		t.Errorf("text=%q metadata=%v", r.text(), r.last().CustomMetadata)
	}
	if st := e.m.Status()[0]; st.Hold != 12*time.Hour {
		t.Errorf("hold = %s, want 12h (until midnight PST)", st.Hold)
	}
	if e.m.Registry() != e.reg {
		t.Error("Registry()")
	}
	var fe *failover.Error
	e.fall.setDefault(step{err: apiErr(503, "UNAVAILABLE")})
	r = run(t.Context(), e.m, userReq("hi"), false)
	if !errors.As(r.err(), &fe) || fe.RetryAfterHint() != fe.RetryAfter || fe.RetryAfter != 0 {
		t.Errorf("err = %v", r.err())
	}
}
