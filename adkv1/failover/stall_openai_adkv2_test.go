//go:build ignore

package failover_test

import (
	"context"
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

	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// oaMode is how a fake OpenAI Responses endpoint answers.
type oaMode int32

const (
	oaHeadersThenKeepAlives   oaMode = iota // SSE headers, then ": keep-alive" comments only
	oaTwoDeltasThenKeepAlives               // two output_text deltas, then comments only
	oaNeverAnswers                          // reads the request, never answers
	oaHinted429                             // 429 with Retry-After-Ms 5000
	oaGated                                 // waits for gate, then answers a whole stream
)

// fakeResponses is an OpenAI Responses API endpoint on 127.0.0.1
// (POST …/responses, as ADK v2's model/openaimodel calls it).
type fakeResponses struct {
	srv       *httptest.Server
	mode      atomic.Int32
	hits      atomic.Int64
	stalled   chan struct{}
	keepAlive chan struct{}
	gone      chan struct{}
	mu        sync.Mutex
	paths     []string
	gate      chan struct{}
}

func newFakeResponses(t *testing.T, mode oaMode) *fakeResponses {
	f := &fakeResponses{stalled: make(chan struct{}, 16), keepAlive: make(chan struct{}, 4), gone: make(chan struct{}, 16), gate: make(chan struct{})}
	f.mode.Store(int32(mode))
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func oaEvent(w io.Writer, typ, data string) {
	fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,%s}\n\n", typ, typ, data)
}

func (f *fakeResponses) handle(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	defer func() { f.gone <- struct{}{} }()
	fl := w.(http.Flusher)
	switch oaMode(f.mode.Load()) {
	case oaHinted429:
		w.Header().Set("Retry-After-Ms", "5000")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for org-SECRETORG","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	case oaNeverAnswers:
		f.stalled <- struct{}{}
		<-r.Context().Done()
		return
	case oaGated:
		f.stalled <- struct{}{}
		select {
		case <-f.gate:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		oaEvent(w, "response.created", `"sequence_number":0,"response":{"id":"resp_1","object":"response","model":"gpt-test","status":"in_progress","output":[]}`)
		oaEvent(w, "response.output_text.delta", `"sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"from primary"`)
		oaEvent(w, "response.completed", `"sequence_number":2,"response":{"id":"resp_1","object":"response","model":"gpt-test","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"from primary","annotations":[]}]}]}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	oaEvent(w, "response.created", `"sequence_number":0,"response":{"id":"resp_1","object":"response","model":"gpt-test","status":"in_progress","output":[]}`)
	if oaMode(f.mode.Load()) == oaTwoDeltasThenKeepAlives {
		for i, d := range []string{"Hello, ", "wor"} {
			oaEvent(w, "response.output_text.delta", fmt.Sprintf(`"sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":%q`, i+1, d))
		}
	}
	io.WriteString(w, ": keep-alive\n\n")
	fl.Flush()
	f.stalled <- struct{}{}
	tk := time.NewTicker(5 * time.Millisecond) // the server's keep-alive cadence
	defer tk.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tk.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
			select {
			case f.keepAlive <- struct{}{}:
			default:
			}
		}
	}
}

// openAIChain builds, from a configuration chain, a failover Model whose
// primary is an OpenAI endpoint (backend openai) on the fake server and
// whose fallback is a scripted model.
func openAIChain(t *testing.T, srv *fakeResponses, pol registry.Policy, ep func(*config.ModelEndpoint), opts ...failover.Option) (*failover.Model, *fakeLLM, *registrytest.FakeClock) {
	t.Helper()
	t.Setenv("FAKE_OPENAI_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", "")
	e := config.ModelEndpoint{Model: "gpt-test", Backend: config.BackendOpenAI, BaseURL: srv.srv.URL + "/v1", APIKeyEnv: "FAKE_OPENAI_KEY",
		FirstOutputTimeout: config.Duration(30 * time.Second), IdleTimeout: config.Duration(10 * time.Second)}
	if ep != nil {
		ep(&e)
	}
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{e}}
	pKey := registry.Key(e.Identity())
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy(pKey, pol), registry.WithPolicy(fallbackKey, pol))
	primary, err := failover.FromConfig(t.Context(), "openai-primary", chain, reg, failover.WithErrorWhenUnavailable(), failover.WithLogInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	fall := newFake("fallback-model", answer("from fallback"))
	eps := primary.Endpoints()
	eps = append(eps, failover.Endpoint{LLM: fall, Key: fallbackKey})
	opts = append([]failover.Option{failover.WithLogInterval(-1)}, opts...)
	m, err := failover.New("chat", reg, eps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, fall, clk
}

// TestOpenAIEndpointFromConfig: an OpenAI endpoint declared in the
// configuration file is ADK v2's OpenAI model calling the Responses API
// (POST {base_url}/responses), keyed by its identity.
func TestOpenAIEndpointFromConfig(t *testing.T) {
	srv := newFakeResponses(t, oaGated)
	close(srv.gate)
	m, _, _ := openAIChain(t, srv, testPolicy(), nil)
	r := run(t.Context(), m, userReq("hi"), true)
	if err := r.err(); err != nil || r.text() != "from primary" {
		t.Fatalf("text %q err %v", r.text(), err)
	}
	if got := meta(r.last(), failover.AttrEndpoint); got != "model:gpt-test@openai/"+srv.srv.URL+"/v1" {
		t.Errorf("endpoint %v", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.paths) != 1 || srv.paths[0] != "/v1/responses" {
		t.Errorf("paths %v, want one POST /v1/responses", srv.paths)
	}
}

// TestOpenAIStalls: through ADK v2's OpenAI model and openai-go, a
// Responses stream that sends its headers and then only SSE keep-alive
// comments fails over at its first-output deadline (reason stall); a
// stream that stalls after two deltas ends with a *StallError and is
// charged to the endpoint (before, it ran to the caller's deadline and was
// excluded); a unary call never answered fails over too.
func TestOpenAIStalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   oaMode
		stream bool
	}{
		{"stream/headers-then-keepalives", oaHeadersThenKeepAlives, true},
		{"unary/never-answers", oaNeverAnswers, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeResponses(t, tc.mode)
			m, fall, _ := openAIChain(t, srv, testPolicy(), nil)
			timers := newFakeTimers()
			failover.SetStallTimers(m, timers.start)
			done := runAsync(t.Context(), m, tc.stream)
			first := timers.next(t)
			<-srv.stalled
			if tc.mode == oaHeadersThenKeepAlives {
				<-srv.keepAlive
				<-srv.keepAlive
			}
			if !first.fire() {
				t.Fatal("the first-output deadline was stopped before any content")
			}
			r := <-done
			if r.err() != nil || r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "stall" {
				t.Fatalf("text %q err %v reason %v", r.text(), r.err(), meta(r.last(), failover.AttrFailoverReason))
			}
			<-srv.gone
			if st := m.Status()[0].Breaker; st.Counts.ConsecutiveFailures != 1 || fall.calls.Load() != 1 {
				t.Errorf("primary counts %+v, fallback calls %d", st.Counts, fall.calls.Load())
			}
		})
	}
	t.Run("stream/mid-stream", func(t *testing.T) {
		srv := newFakeResponses(t, oaTwoDeltasThenKeepAlives)
		m, fall, _ := openAIChain(t, srv, testPolicy(), nil)
		timers := newFakeTimers()
		failover.SetStallTimers(m, timers.start)
		done := runAsync(t.Context(), m, true)
		timers.next(t)
		timers.next(t)
		idle := timers.next(t) // re-armed after the second delta
		<-srv.stalled
		<-srv.keepAlive
		if idle.duration() != 10*time.Second || !idle.fire() {
			t.Fatalf("idle deadline %v not running", idle.duration())
		}
		r := <-done
		var se *failover.StallError
		if len(r.errs) != 1 || !errors.As(r.errs[0], &se) || se.Phase != failover.StallIdle || se.Chunks != 2 || se.TextBytes != len("Hello, wor") {
			t.Fatalf("errors %v, want an idle stall after 2 deltas", r.errs)
		}
		<-srv.gone
		if st := m.Status()[0].Breaker; st.Counts.ConsecutiveFailures != 1 || st.Counts.Exclusions != 0 || fall.calls.Load() != 0 {
			t.Errorf("primary counts %+v (want the stall as a failure), fallback calls %d", st.Counts, fall.calls.Load())
		}
	})
}

// TestOpenAIProbeInFlightIsCircuitOpen: while a recovering OpenAI
// primary's single trial call is in flight, the calls turned away are
// labelled circuit_open, not rate_limited (the hold that ended came from a
// retry hint), and say when the probe must have answered (its first-output
// deadline, less the time it has run), not the 5-minute probe lease; so does
// the breaker's own Status.
func TestOpenAIProbeInFlightIsCircuitOpen(t *testing.T) {
	srv := newFakeResponses(t, oaHinted429)
	var mu sync.Mutex
	var events []failover.Event
	m, _, clk := openAIChain(t, srv, tripOnHint(failover.DefaultPolicy()), nil, failover.WithOnFailover(func(_ context.Context, ev failover.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	r := run(t.Context(), m, userReq("hi"), false)
	if meta(r.last(), failover.AttrFailoverReason) != "rate_limited" {
		t.Fatalf("first call: %v", meta(r.last(), failover.AttrFailoverReason))
	}
	clk.Advance(6 * time.Second) // past the 5s hint
	srv.mode.Store(int32(oaGated))
	probe := runAsync(t.Context(), m, true)
	<-srv.stalled // the probe is at the primary
	clk.Advance(10 * time.Second)
	turned := run(t.Context(), m, userReq("hi"), false)
	if got := meta(turned.last(), failover.AttrFailoverReason); got != "circuit_open" {
		t.Errorf("turned-away call labelled %v, want circuit_open", got)
	}
	mu.Lock()
	last := events[len(events)-1]
	mu.Unlock()
	if last.Reason != failover.ReasonCircuitOpen || last.RetryAfter != 20*time.Second {
		t.Errorf("turned-away event: %s, retry after %v; want circuit_open, 20s (the probe's 30s first-output deadline less 10s)", last.Reason, last.RetryAfter)
	}
	if unavailable, wait := m.ModelUnavailable("chat"); unavailable || wait != 0 {
		t.Errorf("ModelUnavailable = %v, %v with a fallback available", unavailable, wait)
	}
	if w := m.Status()[0].Breaker.RetryAfter; w != last.RetryAfter {
		t.Errorf("the breaker's own wait is %v, want the %v the event says (not the lease)", w, last.RetryAfter)
	}
	close(srv.gate)
	if p := <-probe; p.text() != "from primary" {
		t.Fatalf("probe answered %q %v", p.text(), p.err())
	}
	if st := m.Status()[0].Breaker; st.State != registry.StateClosed {
		t.Errorf("primary %v after its probe succeeded", st.State)
	}
}

// TestOpenAILocalRequestErrorChargesNoOne: ADK's OpenAI model refuses TopK
// before sending anything; that error is the request's, so it is charged to
// no endpoint (before, it failed over as server_error, and ten such calls
// opened a healthy endpoint).
func TestOpenAILocalRequestErrorChargesNoOne(t *testing.T) {
	srv := newFakeResponses(t, oaGated)
	close(srv.gate)
	m, fall, _ := openAIChain(t, srv, testPolicy(), nil)
	k := float32(40)
	for range 5 {
		req := userReq("hi")
		req.Config = &genai.GenerateContentConfig{TopK: &k}
		r := run(t.Context(), m, req, false)
		if len(r.errs) != 1 || !strings.Contains(r.errs[0].Error(), "topK") {
			t.Fatalf("errors %v, want openaimodel's TopK error", r.errs)
		}
	}
	if st := m.Status()[0].Breaker; st.State != registry.StateClosed || st.Counts.Failures != 0 {
		t.Errorf("primary %v %+v after local errors, want closed, no failure", st.State, st.Counts)
	}
	if srv.hits.Load() != 0 || fall.calls.Load() != 0 {
		t.Errorf("server hits %d, fallback calls %d: the request never left", srv.hits.Load(), fall.calls.Load())
	}
}

// TestOpenAIHintSurvivesWithTimeout: an OpenAI endpoint from the
// configuration file has one retry owner, failover (openai-go's own
// retries are off): with a short Timeout, a 429 carrying Retry-After-Ms
// fails over at once as rate_limited with its hint, one request per call,
// and sustained 429s open the endpoint on the third call for the hint
// (cause retry_hint). With openai-go's default retries it slept through
// the hint into the Timeout and reported a timeout without one.
func TestOpenAIHintSurvivesWithTimeout(t *testing.T) {
	srv := newFakeResponses(t, oaHinted429)
	var mu sync.Mutex
	var events []failover.Event
	m, _, _ := openAIChain(t, srv, failover.DefaultPolicy(), func(e *config.ModelEndpoint) { e.Timeout = config.Duration(time.Second) },
		failover.WithOnFailover(func(_ context.Context, ev failover.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }))
	// Sustained exhaustion opens the endpoint by its 5th call
	// (failover.DefaultPolicy's retry_hint_failures), for the hint.
	const calls = 5
	for i := range calls {
		r := run(t.Context(), m, userReq("hi"), false)
		if got := meta(r.last(), failover.AttrFailoverReason); got != "rate_limited" {
			t.Fatalf("call %d: reason %v, want rate_limited", i, got)
		}
	}
	if srv.hits.Load() != calls {
		t.Errorf("%d requests for %d calls, want %d (no openai-go retries)", srv.hits.Load(), calls, calls)
	}
	st := m.Status()[0]
	if st.Breaker.State != registry.StateOpen || st.Breaker.Cause != registry.CauseRetryHint || st.Hold < 4*time.Second {
		t.Errorf("primary %v cause %v hold %v, want open for the 5s hint", st.Breaker.State, st.Breaker.Cause, st.Hold)
	}
	mu.Lock()
	defer mu.Unlock()
	if events[0].Reason != failover.ReasonRateLimited || events[0].RetryAfter < 4*time.Second {
		t.Errorf("first failover %s retry after %v, want rate_limited with the hint", events[0].Reason, events[0].RetryAfter)
	}
}
