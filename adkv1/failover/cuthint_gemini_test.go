package failover_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/model/gemini"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/internal/retryafter"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// clientRetries is a client's own retry loop above RetryAfterTransport (as
// openai-go's is): it retries a 429 once, after sleeping its hint, at most
// maxSleep. It signals returned after every HTTP attempt comes back.
type clientRetries struct {
	base     http.RoundTripper
	maxSleep time.Duration
	returned chan struct{}
}

func (c *clientRetries) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.attempt(req)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		return resp, err
	}
	wait := min(retryafter.FromHeader(resp.Header, time.Now()), c.maxSleep)
	resp.Body.Close()
	select {
	case <-time.After(wait):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return c.attempt(retry)
}

func (c *clientRetries) attempt(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	c.returned <- struct{}{}
	return resp, err
}

// cutHintEnv is a Gemini primary (the real genai client, with a retry loop
// of its own above RetryAfterTransport) answering each call's first request
// 429 with the hint headers, and its retry as second says; a scripted
// fallback; fake Timeout and stall timers.
type cutHintEnv struct {
	m                *failover.Model
	reg              *registry.Registry
	timeouts, stalls *fakeTimers
	rt               *clientRetries
	hung             chan struct{}
	events           eventLog
}

// The retry's answer (second).
const (
	retryHangs       = iota // never answers: our Timeout cuts it
	retryStalls             // 200 headers, then nothing: the first-output deadline cuts it
	retryServerError        // 500 without a hint
)

func newCutHintEnv(t *testing.T, hint http.Header, second int) *cutHintEnv {
	t.Helper()
	clearGenaiEnv(t)
	e := &cutHintEnv{hung: make(chan struct{}, 4)}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
		if hits.Add(1)%2 == 1 {
			for k, v := range hint {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`))
			return
		}
		switch second {
		case retryServerError:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`))
			return
		case retryStalls:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		e.hung <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	e.rt = &clientRetries{base: failover.RetryAfterTransport(nil), maxSleep: 10 * time.Millisecond, returned: make(chan struct{}, 4)}
	llm, err := gemini.NewModel(t.Context(), "primary-model", &genai.ClientConfig{
		Backend: genai.BackendGeminiAPI, APIKey: "test-key", HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
		HTTPClient: &http.Client{Transport: e.rt},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e.reg = registry.MustNew(append(failover.PolicyOptions("model:primary", fallbackKey), registry.WithClock(clk))...)
	e.m, err = failover.New("chat", e.reg, []failover.Endpoint{
		{LLM: llm, Key: "model:primary", Timeout: 30 * time.Second, FirstOutputTimeout: 20 * time.Second},
		{LLM: newFake("fallback-model", answer("from fallback")), Key: fallbackKey},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)), failover.WithLogInterval(-1), failover.WithOnFailover(e.events.add))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.m.Close)
	e.timeouts, e.stalls = newFakeTimers(), newFakeTimers()
	failover.SetTimeoutTimers(e.m, e.timeouts.start)
	failover.SetStallTimers(e.m, e.stalls.start)
	return e
}

func (e *cutHintEnv) counts(t *testing.T) registry.Counts {
	t.Helper()
	b, err := e.reg.Get("model:primary")
	if err != nil {
		t.Fatal(err)
	}
	return b.Counts()
}

// TestCutAfterARetriedHintIsTheEndpoints: a client that retries by itself
// slept out a 429's short hint and sent its retry, which then hung until our
// Timeout, or answered its headers and stalled until our first-output
// deadline. The cut is the endpoint's own timeout (stall): a failure, with
// no hint. Before, any hinted answer earlier in the call made the cut that
// 429 — rate_limited, excluded from the failure counts — so a primary that
// answers quick 429s and then hangs every retry never opened, and cost
// every call its full Timeout.
func TestCutAfterARetriedHintIsTheEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second int
		reason failover.Reason
	}{
		{"hang", retryHangs, failover.ReasonTimeout},
		{"stall", retryStalls, failover.ReasonStall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCutHintEnv(t, http.Header{"Retry-After-Ms": {"5"}}, tc.second) // slept out
			const calls = 3
			for i := range calls {
				done := runAsync(t.Context(), e.m, false)
				timeout, first := e.timeouts.next(t), e.stalls.next(t)
				<-e.rt.returned // the 429
				<-e.hung        // the retry is at the server
				if tc.second == retryStalls {
					<-e.rt.returned // its 200 headers reached the client
					if !first.fire() {
						t.Fatal("first-output deadline stopped before any output")
					}
				} else if !timeout.fire() {
					t.Fatal("Timeout stopped before any output")
				}
				r := <-done
				if tc.second == retryHangs {
					<-e.rt.returned // the cut retry came back
				}
				e.stalls.drain()
				if got := meta(r.last(), failover.AttrFailoverReason); got != string(tc.reason) || r.text() != "from fallback" {
					t.Fatalf("call %d: reason %v answer %q, want %s from the fallback", i, got, r.text(), tc.reason)
				}
				if ev := e.events.last(t); ev.Reason != tc.reason || ev.RetryAfter != 0 {
					t.Errorf("call %d: event %s retry after %v, want %s without a hint", i, ev.Reason, ev.RetryAfter, tc.reason)
				}
				if c := e.counts(t); c.Failures != uint32(i+1) || c.Exclusions != 0 {
					t.Fatalf("call %d: primary counts %+v, want %d failures and no exclusion", i, c, i+1)
				}
			}
		})
	}
}

// TestHintOfARetriedAnswerIsDropped: a 429 with a 30 s hint, retried by the
// client (which caps its sleep) into a 500 without one, is the 500's
// verdict: server_error without the 429's hint. Before, the longest hint of
// the call's responses went with the 500 (a 30 s hold, and a hinted failure
// towards RetryHintFailures).
func TestHintOfARetriedAnswerIsDropped(t *testing.T) {
	e := newCutHintEnv(t, http.Header{"Retry-After": {"30"}}, retryServerError)
	r := run(t.Context(), e.m, userReq("hi"), false)
	if got := meta(r.last(), failover.AttrFailoverReason); got != "server_error" || r.text() != "from fallback" {
		t.Fatalf("reason %v answer %q, want server_error from the fallback", got, r.text())
	}
	if ev := e.events.last(t); ev.Reason != failover.ReasonServerError || ev.RetryAfter != 0 {
		t.Errorf("event %s retry after %v, want server_error without the 429's hint", ev.Reason, ev.RetryAfter)
	}
	if st := e.m.Status()[0]; st.Hold != 0 || st.Breaker.State != registry.StateClosed {
		t.Errorf("primary held %v (%v): want closed, no hold", st.Hold, st.Breaker.State)
	}
	if c := e.counts(t); c.Failures != 1 {
		t.Errorf("primary counts %+v, want one failure", c)
	}
}

// TestCutWhileSleepingOutAHintIsTheRefusal: the client is still sleeping out
// a 429's 30 s hint when our Timeout cuts the call: the call is that 429,
// rate_limited with its hint, an exclusion (the exhaustion check's
// business), not a timeout.
func TestCutWhileSleepingOutAHintIsTheRefusal(t *testing.T) {
	e := newCutHintEnv(t, http.Header{"Retry-After-Ms": {"30000"}}, retryHangs)
	e.rt.maxSleep = time.Hour
	done := runAsync(t.Context(), e.m, false)
	timeout := e.timeouts.next(t)
	<-e.rt.returned // the 429: the client now sleeps 30 s
	if !timeout.fire() {
		t.Fatal("Timeout stopped before any output")
	}
	r := <-done
	if got := meta(r.last(), failover.AttrFailoverReason); got != "rate_limited" || r.text() != "from fallback" {
		t.Fatalf("reason %v answer %q, want rate_limited from the fallback", got, r.text())
	}
	if ev := e.events.last(t); ev.Reason != failover.ReasonRateLimited || ev.RetryAfter < 30*time.Second {
		t.Errorf("event %s retry after %v, want rate_limited with the 30s hint", ev.Reason, ev.RetryAfter)
	}
	if c := e.counts(t); c.Failures != 0 || c.Exclusions != 1 {
		t.Errorf("primary counts %+v, want the refusal excluded", c)
	}
}
