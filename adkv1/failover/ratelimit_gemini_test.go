package failover_test

// Rate limits on model endpoints, end to end: the real genai client and
// ADK's model/gemini (built by FromConfig) against fake Gemini endpoints on
// 127.0.0.1, on the registry's fake clock.

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

const body429in40s = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"40s"}]}}`

// rlEnv is a two-endpoint chain from configuration, without a runner.
type rlEnv struct {
	clk               *registrytest.FakeClock
	reg               *registry.Registry
	primary, fallback *fakeGemini
	m                 *failover.Model
	pKey              registry.Key
	logs              *logBuf
	mu                sync.Mutex
	shed              int
}

func newRLEnv(t *testing.T, throttle *config.Throttle, opts ...failover.Option) *rlEnv {
	t.Helper()
	clearGenaiEnv(t)
	e := &rlEnv{primary: newFakeGemini(t), fallback: newFakeGemini(t), logs: &logBuf{},
		clk: registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.primary.setDefault(reply{chunks: []string{"from primary"}})
	e.fallback.setDefault(reply{chunks: []string{"from fallback"}})
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "primary-model", Backend: config.BackendGeminiAPI, BaseURL: e.primary.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY", Throttle: throttle},
		{Model: "fallback-model", Backend: config.BackendGeminiAPI, BaseURL: e.fallback.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"},
	}}
	e.pKey = registry.Key(chain.Endpoints[0].Identity())
	f := &config.File{Version: 1, Models: map[string]config.ModelChain{"assistant": chain}}
	e.reg = registry.MustNew(append(failover.RegistryOptions(f), registry.WithClock(e.clk))...)
	opts = append([]failover.Option{failover.WithLogger(e.logs.logger()), failover.WithLogInterval(-1),
		failover.WithOnFailover(func(_ context.Context, ev failover.Event) {
			if ev.Reason == failover.ReasonThrottled {
				e.mu.Lock()
				e.shed++
				e.mu.Unlock()
			}
		})}, opts...)
	m, err := failover.FromConfig(t.Context(), "assistant", chain, e.reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	e.m = m
	return e
}

// call makes one model call and returns who answered it.
func (e *rlEnv) call(t *testing.T) string {
	t.Helper()
	r := run(t.Context(), e.m, userReq("hi"), false)
	if r.err() != nil {
		t.Fatalf("call failed: %v", r.err())
	}
	return r.text()
}

// One 429 with a 40 s RetryInfo among successes: that call is served by the
// fallback, and later calls stay on the primary (DefaultPolicy).
func TestGeminiOne429AmongSuccessesKeepsThePrimary(t *testing.T) {
	e := newRLEnv(t, nil)
	e.primary.script(reply{chunks: []string{"from primary"}}, reply{chunks: []string{"from primary"}},
		reply{status: 429, body: body429in40s})
	for i := range 20 {
		want := "from primary"
		if i == 2 {
			want = "from fallback"
		}
		if got := e.call(t); got != want {
			t.Fatalf("call %d (+%ds): answered %q, want %q", i+1, i, got, want)
		}
		e.clk.Advance(time.Second) // all within the 40 s hint
	}
	b := mustBreaker(t, e.reg, e.pKey)
	if st := b.Status(); st.State != registry.StateClosed || st.Counts.Trips != 0 {
		t.Errorf("primary after one 429: %+v, want closed", st)
	}
	if n := e.fallback.hits.Load(); n != 1 {
		t.Errorf("fallback called %d times, want 1 (the 429'd call)", n)
	}
}

// A primary answering 429 to every call opens on its RetryHintFailures-th
// call (5), fresh or after healthy traffic, for the hint, and is not called
// again until the hint has passed; a refused probe re-opens it for the
// hint again.
func TestGeminiSustained429OpensByTheFifthCall(t *testing.T) {
	if n := failover.DefaultPolicy().RetryHintFailures; n != 5 {
		t.Fatalf("DefaultPolicy().RetryHintFailures = %d; docs/failover.md says 5", n)
	}
	for _, tc := range []struct {
		name        string
		warm, opens int
	}{{"a fresh endpoint", 0, 5}, {"after healthy traffic", 30, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRLEnv(t, nil)
			for range tc.warm {
				if got := e.call(t); got != "from primary" {
					t.Fatalf("warm-up: %q", got)
				}
				e.clk.Advance(time.Second)
			}
			e.primary.setDefault(reply{status: 429, body: body429in40s})
			b := mustBreaker(t, e.reg, e.pKey)
			h0 := e.primary.hits.Load()
			for i := 1; i <= tc.opens; i++ {
				if got := e.call(t); got != "from fallback" {
					t.Fatalf("call %d: %q", i, got)
				}
				if open := b.State() == registry.StateOpen; open != (i == tc.opens) {
					t.Fatalf("after call %d: %v, want open on call %d", i, b.State(), tc.opens)
				}
				if i < tc.opens {
					e.clk.Advance(100 * time.Millisecond)
				}
			}
			st := b.Status()
			if st.Cause != registry.CauseRetryHint || st.RetryAfter != 40*time.Second {
				t.Fatalf("open: %+v, want cause retry_hint for the 40 s hint", st)
			}
			for _, step := range []time.Duration{5 * time.Second, 20 * time.Second, 14 * time.Second} { // +39 s
				e.clk.Advance(step)
				if got := e.call(t); got != "from fallback" {
					t.Fatalf("within the hint: %q", got)
				}
			}
			if n := e.primary.hits.Load() - h0; n != int64(tc.opens) {
				t.Fatalf("primary called %d times within its hint, want %d", n, tc.opens)
			}
			// A refused probe re-opens for the hint again (not a grown hold).
			e.clk.Advance(time.Second)
			if got := e.call(t); got != "from fallback" || e.primary.hits.Load()-h0 != int64(tc.opens)+1 {
				t.Fatalf("after the hint: %q, primary hits %d (want its probe)", got, e.primary.hits.Load()-h0)
			}
			if st := b.Status(); st.State != registry.StateOpen || st.RetryAfter != 40*time.Second {
				t.Fatalf("after a refused probe: %+v, want open for the 40 s hint", st)
			}
			e.primary.setDefault(reply{chunks: []string{"from primary"}})
			e.clk.Advance(40 * time.Second)
			if got := e.call(t); got != "from primary" {
				t.Fatalf("after the hint: %q (want its probe answered)", got)
			}
			if b.State() != registry.StateClosed {
				t.Errorf("after a successful probe: %v", b.State())
			}
		})
	}
}

// A hint beyond the cap is logged once per endpoint, with the server's value.
func TestGeminiHintBeyondTheCapIsLoggedOnce(t *testing.T) {
	e := newRLEnv(t, nil)
	day := strings.Replace(body429in40s, `"40s"`, `"86400s"`, 1)
	e.primary.setDefault(reply{status: 429, body: day})
	for range 5 {
		e.call(t)
		e.clk.Advance(2 * time.Hour)
	}
	if n := e.logs.count("exceeds max_retry_hint"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, e.logs)
	}
	if !strings.Contains(e.logs.String(), "hint=24h0m0s max_retry_hint=1h0m0s") {
		t.Errorf("the line lacks the server's value and the cap:\n%s", e.logs)
	}
}

// tokenBucket answers 429 once its tokens (rate per second, burst) are
// spent, on the test's clock.
func tokenBucket(clk registry.Clock, rate, burst float64) func() *reply {
	tokens, last := burst, clk.Now()
	return func() *reply {
		now := clk.Now()
		tokens = min(burst, tokens+now.Sub(last).Seconds()*rate)
		last = now
		if tokens >= 1 {
			tokens--
			return nil
		}
		return &reply{status: 429, body: strings.Replace(body429in40s, `"40s"`, `"1s"`, 1)}
	}
}

type stormResult struct {
	calls, fallback, primary429, shed int
	maxAttempts                       int
	trips                             uint64
}

// storm offers 30 calls a second to a primary that accepts 20 (a token
// bucket with a burst of 5): without throttling it answers 429 to a third.
func storm(t *testing.T, throttle *config.Throttle, calls int) stormResult {
	e := newRLEnv(t, throttle, failover.WithThrottleRandom(rand.New(rand.NewPCG(1, 2)).Float64))
	e.primary.before = tokenBucket(e.clk, 20, 5)
	var r stormResult
	for range calls {
		e.clk.Advance(time.Second / 30)
		p0, f0 := e.primary.hits.Load(), e.fallback.hits.Load()
		got := e.call(t)
		dp, df := int(e.primary.hits.Load()-p0), int(e.fallback.hits.Load()-f0)
		r.maxAttempts = max(r.maxAttempts, dp+df)
		switch {
		case got == "from fallback":
			r.fallback++
			r.primary429 += dp
		case got != "from primary":
			t.Fatalf("call answered %q", got)
		}
		r.calls++
	}
	e.mu.Lock()
	r.shed = e.shed
	e.mu.Unlock()
	r.trips = mustBreaker(t, e.reg, e.pKey).Counts().Trips
	if e.m.Pending() != 0 {
		t.Errorf("pending = %d", e.m.Pending())
	}
	return r
}

// With throttling on, a primary that answers 429 to a third of the calls
// (a capacity limit) sends about that share to the fallback (at most 5
// points more), much of it without a 429 round trip once the throttle has
// learned that shedding costs no accepted calls (about a window); every
// call is answered, the breaker never opens, and no call makes more
// endpoint calls than without throttling.
func TestGeminiThrottleShedsAProportionalShare(t *testing.T) {
	const n = 2400 // 80 s of traffic
	off := storm(t, nil, n)
	on := storm(t, &config.Throttle{}, n)
	share := func(r stormResult) float64 { return float64(r.fallback) / float64(r.calls) }
	t.Logf("off: %+v (fallback %.1f%%)", off, 100*share(off))
	t.Logf("on:  %+v (fallback %.1f%%)", on, 100*share(on))
	if s := share(off); s < 0.30 || s > 0.37 {
		t.Fatalf("without throttling the fallback served %.1f%%; the storm should be a third", 100*s)
	}
	if d := share(on) - share(off); d > 0.05 || d < -0.05 {
		t.Errorf("with throttling the fallback served %.1f%%, %.1f points from the storm's %.1f%%", 100*share(on), 100*d, 100*share(off))
	}
	if on.shed == 0 || on.primary429 >= off.primary429*85/100 {
		t.Errorf("throttling shed %d calls and left %d 429s (%d without): want most of the share sent straight", on.shed, on.primary429, off.primary429)
	}
	if on.trips != 0 || off.trips != 0 {
		t.Errorf("the breaker opened (%d with throttling, %d without): a partial storm is not an outage", on.trips, off.trips)
	}
	if on.maxAttempts > off.maxAttempts {
		t.Errorf("a call made %d endpoint calls with throttling, %d at most without", on.maxAttempts, off.maxAttempts)
	}
}

// Shed calls are not failures, the throttle state is on Status, and the
// counter and the gauge are exported.
func TestGeminiThrottleTelemetryAndStatus(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e := newRLEnv(t, &config.Throttle{K: 1.1}, failover.WithThrottleRandom(rand.New(rand.NewPCG(3, 4)).Float64),
		failover.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	e.primary.before = tokenBucket(e.clk, 10, 2)
	for range 1500 { // 50 s: the throttle learns for about a window before it sheds
		e.clk.Advance(time.Second / 30)
		e.call(t)
	}
	st := e.m.Status()
	if st[0].Throttle == nil || st[0].Throttle.Rejections == 0 || st[0].Throttle.RejectProbability <= 0 || st[1].Throttle != nil {
		t.Fatalf("status = %+v / %+v", st[0].Throttle, st[1].Throttle)
	}
	if p, n, ok := e.m.ThrottleOf(e.pKey); !ok || p != st[0].Throttle.RejectProbability || n != st[0].Throttle.Rejections {
		t.Errorf("ThrottleOf(primary) = %v, %d, %v; status %+v", p, n, ok, *st[0].Throttle)
	}
	if _, _, ok := e.m.ThrottleOf(st[1].Key); ok {
		t.Error("ThrottleOf reports a throttle for the fallback, which has none")
	}
	if _, _, ok := e.m.ThrottleOf("model:unknown"); ok {
		t.Error("ThrottleOf reports a throttle for a key that is no endpoint")
	}
	// The status page shows it through ThrottleOf alone.
	page, err := statuspage.New(e.reg, statuspage.WithThrottles(e.m.ThrottleOf))
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	shown := map[string]*statuspage.Throttle{}
	for _, d := range page.Document().Dependencies {
		shown[d.Name] = d.Throttle
	}
	if got := shown[string(e.pKey)]; got == nil || got.RejectProbability != st[0].Throttle.RejectProbability || got.Rejections != st[0].Throttle.Rejections {
		t.Errorf("status page throttle of the primary = %+v, want %+v", got, *st[0].Throttle)
	}
	if got, ok := shown[string(st[1].Key)]; !ok || got != nil {
		t.Errorf("status page throttle of the fallback = %+v (listed %v), want listed without one", got, ok)
	}
	b := mustBreaker(t, e.reg, e.pKey)
	rep := b.Reported()
	if got := rep[registry.Success] + rep[registry.Failure] + rep[registry.Excluded]; got != uint64(e.primary.hits.Load()) {
		t.Errorf("the breaker counted %d outcomes for %d calls it was sent: shed calls must not be counted", got, e.primary.hits.Load())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var shed int64
	var prob float64
	found := 0
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch mt.Name {
			case failover.MetricThrottleRejections:
				for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
					if v, _ := dp.Attributes.Value("endpoint"); v.AsString() == string(e.pKey) {
						shed, found = dp.Value, found+1
					}
				}
			case failover.MetricThrottleRejectProbability:
				for _, dp := range mt.Data.(metricdata.Gauge[float64]).DataPoints {
					prob, found = dp.Value, found+1
				}
			}
		}
	}
	if found != 2 || uint64(shed) != st[0].Throttle.Rejections || prob != st[0].Throttle.RejectProbability {
		t.Errorf("metrics: %d series, rejections %d (status %d), probability %v (status %v)", found, shed, st[0].Throttle.Rejections, prob, st[0].Throttle.RejectProbability)
	}
}

func TestThrottleValidation(t *testing.T) {
	reg := registry.MustNew()
	llm := &endpointLLM{name: "x"}
	_, err := failover.New("m", reg, []failover.Endpoint{
		{LLM: llm, Key: "model:a", Throttle: &failover.Throttle{K: 1, Window: time.Millisecond, MaxRejectProbability: 2}},
		{LLM: llm, Key: "model:b", Throttle: &failover.Throttle{}},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	for _, want := range []string{"endpoints[0].throttle.k", "endpoints[0].throttle.window", "endpoints[0].throttle.max_reject_probability", "endpoints[1].throttle: the last endpoint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want %q", err, want)
		}
	}
}

// Endpoint.Timeout obeys the layering rule of a tool's call_timeout: under
// a 5 m window and probe lease, 10 m is refused, with every problem at once.
func TestEndpointTimeoutLayering(t *testing.T) {
	reg := registry.MustNew(failover.PolicyOptions("model:a", "model:b")...)
	llm := &endpointLLM{name: "x"}
	_, err := failover.New("m", reg, []failover.Endpoint{
		{LLM: llm, Key: "model:a", Timeout: 10 * time.Minute},
		{LLM: llm, Key: "model:b", Timeout: 5 * time.Minute},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	for _, want := range []string{
		"endpoints[0].timeout: 10m0s must be below the breaker's window (5m0s)",
		"endpoints[0].timeout: 10m0s must be below the breaker's probe_lease (5m0s)",
		"endpoints[1].timeout: 5m0s must be below the breaker's window (5m0s)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v\nwant %q", err, want)
		}
	}
	if _, err := failover.New("m", reg, []failover.Endpoint{{LLM: llm, Key: "model:a", Timeout: 4 * time.Minute}},
		failover.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Errorf("4m under 5m: %v", err)
	}
}

// Throttle first, open when it is an outage: with throttling on, a primary
// refusing every call still opens on the fifth refusal that reaches it;
// one failing with 503s (no hint) is never shed (only 429s count as
// refusals) and opens by its consecutive-failure threshold.
func TestGeminiThrottleLeavesOutagesToTheBreaker(t *testing.T) {
	t.Run("every call 429", func(t *testing.T) {
		e := newRLEnv(t, &config.Throttle{}, failover.WithThrottleRandom(rand.New(rand.NewPCG(5, 6)).Float64))
		e.primary.setDefault(reply{status: 429, body: body429in40s})
		b := mustBreaker(t, e.reg, e.pKey)
		calls := 0
		for b.State() != registry.StateOpen {
			if calls++; calls > 100 {
				t.Fatalf("not open after 100 calls (%d reached the primary)", e.primary.hits.Load())
			}
			if got := e.call(t); got != "from fallback" {
				t.Fatalf("call %d: %q", calls, got)
			}
			e.clk.Advance(time.Second / 30)
		}
		if n := e.primary.hits.Load(); n != 5 {
			t.Errorf("open after %d calls, %d of which reached the primary; want 5", calls, n)
		}
		t.Logf("open on call %d", calls)
	})
	t.Run("503 outage", func(t *testing.T) {
		e := newRLEnv(t, &config.Throttle{}, failover.WithThrottleRandom(rand.New(rand.NewPCG(5, 6)).Float64))
		e.primary.setDefault(reply{status: 503, body: body503})
		b := mustBreaker(t, e.reg, e.pKey)
		for i := 1; i <= 10; i++ {
			if got := e.call(t); got != "from fallback" {
				t.Fatalf("call %d: %q", i, got)
			}
			e.clk.Advance(time.Second / 30)
		}
		if b.State() != registry.StateOpen || e.primary.hits.Load() != 10 {
			t.Errorf("after 10 503s: %v, primary called %d times; want open by consecutive_failures 10, nothing shed", b.State(), e.primary.hits.Load())
		}
		if st := e.m.Status()[0].Throttle; st.Rejections != 0 {
			t.Errorf("shed %d calls of an outage", st.Rejections)
		}
	})
}
