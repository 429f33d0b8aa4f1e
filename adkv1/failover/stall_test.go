package failover_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// fakeTimers stands in for the stall deadlines' timers: the test fires a
// deadline when it chooses, instead of waiting for it. Every arming (start
// or Reset) is announced on armed.
type fakeTimers struct {
	armed  chan arming
	starts atomic.Int64 // timers started (not counting Resets)
}

type fakeTimer struct {
	ft *fakeTimers
	f  func()

	mu      sync.Mutex
	d       time.Duration
	running bool
}

// arming is one start or Reset of a timer, for d.
type arming struct {
	*fakeTimer
	d time.Duration
}

// duration is the deadline this arming set.
func (a arming) duration() time.Duration { return a.d }

func newFakeTimers() *fakeTimers { return &fakeTimers{armed: make(chan arming, 64)} }

func (ft *fakeTimers) start(d time.Duration, f func()) failover.StallTimer {
	t := &fakeTimer{ft: ft, f: f, d: d, running: true}
	ft.starts.Add(1)
	ft.armed <- arming{t, d}
	return t
}

func (t *fakeTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.running
	t.running = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	was := t.running
	t.running, t.d = true, d
	t.mu.Unlock()
	t.ft.armed <- arming{t, d}
	return was
}

// fire passes the deadline now, if the timer still runs.
func (t *fakeTimer) fire() bool {
	t.mu.Lock()
	was := t.running
	t.running = false
	t.mu.Unlock()
	if was {
		t.f()
	}
	return was
}

// next returns the next arming, failing the test if none comes (a
// deadline that should have been armed was not).
func (ft *fakeTimers) next(t *testing.T) arming {
	t.Helper()
	select {
	case tm := <-ft.armed:
		return tm
	case <-t.Context().Done():
		t.Fatal("no stall deadline was armed")
		return arming{}
	}
}

// drain forgets the armings so far (a finished call's).
func (ft *fakeTimers) drain() {
	for {
		select {
		case <-ft.armed:
		default:
			return
		}
	}
}

// stallMode is how a stallingGemini answers.
type stallMode int

const (
	// headersThenKeepAlives answers 200 with SSE headers, then only
	// keep-alives (blank lines: genai's SSE reader skips them; it refuses
	// ": comment" lines as invalid chunks) until the client goes.
	headersThenKeepAlives stallMode = iota
	// twoChunksThenKeepAlives streams two text chunks, then keep-alives.
	twoChunksThenKeepAlives
	// neverAnswers accepts the request and never answers (unary calls).
	neverAnswers
)

// stallingGemini is a Gemini endpoint on 127.0.0.1 that stalls as its mode
// says. stalled receives a value once the stall has begun (headers and
// chunks flushed, or the request read); gone once the handler saw the
// client abandon the request: the stalled connection was torn down, nothing
// left behind.
type stallingGemini struct {
	srv     *httptest.Server
	mode    stallMode
	hits    atomic.Int64
	stalled chan struct{}
	gone    chan struct{}
	// keepAlive receives a value (when there is room) per keep-alive sent.
	keepAlive chan struct{}
	tick      time.Duration
}

func newStallingGemini(t testing.TB, mode stallMode) *stallingGemini {
	s := &stallingGemini{mode: mode, stalled: make(chan struct{}, 16), gone: make(chan struct{}, 16),
		keepAlive: make(chan struct{}, 4), tick: 5 * time.Millisecond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stallingGemini) handle(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	defer func() { s.gone <- struct{}{} }()
	// Read the request to its end, so the server watches the connection
	// and sees the client go.
	_, _ = io.Copy(io.Discard, r.Body)
	fl := w.(http.Flusher)
	if s.mode == neverAnswers {
		s.stalled <- struct{}{}
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if s.mode == twoChunksThenKeepAlives {
		for _, c := range []string{"Hello, ", "wor"} {
			fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":%q}]}}]}\n\n", c)
		}
	}
	fmt.Fprint(w, "\n")
	fl.Flush()
	s.stalled <- struct{}{}
	tk := time.NewTicker(s.tick) // the server's keep-alive cadence, not a wait of the test
	defer tk.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tk.C:
			if _, err := fmt.Fprint(w, "\n"); err != nil {
				return
			}
			fl.Flush()
			select {
			case s.keepAlive <- struct{}{}:
			default:
			}
		}
	}
}

// stallChain builds, from a configuration chain, a failover Model whose
// primary is the stalling endpoint and whose fallback is a healthy fake
// Gemini. The stall deadlines come from the configuration file's fields.
func stallChain(t *testing.T, primary *stallingGemini, pol registry.Policy, opts ...failover.Option) (*failover.Model, *fakeGemini, *logBuf, registry.Key) {
	t.Helper()
	clearGenaiEnv(t)
	fall := newFakeGemini(t)
	fall.setDefault(reply{chunks: []string{"from ", "fallback"}})
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "primary-model", Backend: config.BackendGeminiAPI, BaseURL: primary.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY",
			FirstOutputTimeout: config.Duration(2 * time.Second), IdleTimeout: config.Duration(time.Second)},
		{Model: "fallback-model", Backend: config.BackendGeminiAPI, BaseURL: fall.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"},
	}}
	pKey := registry.Key(chain.Endpoints[0].Identity())
	fKey := registry.Key(chain.Endpoints[1].Identity())
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy(pKey, pol), registry.WithPolicy(fKey, pol))
	logs := &logBuf{}
	opts = append([]failover.Option{failover.WithLogger(logs.logger()), failover.WithLogInterval(-1)}, opts...)
	m, err := failover.FromConfig(t.Context(), "assistant-model", chain, reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, fall, logs, pKey
}

// runAsync consumes a call on its own goroutine; the result arrives on the
// returned channel.
func runAsync(ctx context.Context, m model.LLM, stream bool) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- run(ctx, m, userReq("hi"), stream) }()
	return ch
}

// TestStallBeforeFirstOutputFailsOver: through the real genai client, a
// primary that answers its headers and then only keep-alives (streaming),
// or never answers a unary call, is a stall once its first-output deadline
// passes: the call fails over to the fallback, with reason stall in the
// response metadata, the failover log line and the stall counter; the
// stalled request is torn down (the server sees the client go). Headers
// and keep-alives never stop the deadline.
func TestStallBeforeFirstOutputFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   stallMode
		stream bool
	}{
		{"stream/headers-then-keepalives", headersThenKeepAlives, true},
		{"unary/never-answers", neverAnswers, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := newStallingGemini(t, tc.mode)
			reader := newManualReader()
			m, fall, logs, pKey := stallChain(t, primary, testPolicy(), failover.WithMeterProvider(meterProvider(reader)))
			timers := newFakeTimers()
			failover.SetStallTimers(m, timers.start)

			done := runAsync(t.Context(), m, tc.stream)
			first := timers.next(t) // the primary's first-output deadline
			if d := first.duration(); d != 2*time.Second {
				t.Fatalf("first-output deadline armed for %v, want the configured 2s", d)
			}
			<-primary.stalled // headers are out (or the request is in): still no content
			if tc.mode == headersThenKeepAlives {
				<-primary.keepAlive // two keep-alives later
				<-primary.keepAlive
			}
			if !first.fire() {
				t.Fatal("the first-output deadline was stopped by headers or keep-alives")
			}
			r := <-done
			if err := r.err(); err != nil || r.text() != "from fallback" {
				t.Fatalf("text %q, err %v; want the fallback's answer", r.text(), err)
			}
			if got := meta(r.last(), failover.AttrFailoverReason); got != "stall" {
				t.Errorf("failover reason %v, want stall", got)
			}
			if got := meta(r.last(), failover.AttrFailoverFrom); got != string(pKey) {
				t.Errorf("failover from %v, want %s", got, pKey)
			}
			if !strings.Contains(logs.String(), "reason=stall") {
				t.Errorf("no failover log line with reason=stall:\n%s", logs)
			}
			if n := counterValue(t, reader, failover.MetricStalls, "phase", "first_output"); n != 1 {
				t.Errorf("%s{phase=first_output} = %d, want 1", failover.MetricStalls, n)
			}
			if n := counterValue(t, reader, failover.MetricFailovers, "reason", "stall"); n != 1 {
				t.Errorf("%s{reason=stall} = %d, want 1", failover.MetricFailovers, n)
			}
			<-primary.gone // the stalled request was abandoned by the client: no stream left open
			if fall.hits.Load() != 1 || m.Pending() != 0 || m.Abandoned() != 0 {
				t.Errorf("fallback hits %d, pending %d, abandoned %d", fall.hits.Load(), m.Pending(), m.Abandoned())
			}
			if st := m.Status()[0].Breaker; st.Counts.ConsecutiveFailures != 1 {
				t.Errorf("primary's breaker counts %+v, want the stall as one failure", st.Counts)
			}
		})
	}
}

// TestStallMidStreamEndsWithTypedError: a primary that streams two chunks
// and then only keep-alives ends the call, once its idle deadline passes,
// with a *StallError saying how much was streamed; no "complete" answer
// follows (ADK's gemini model would aggregate the two chunks into one when
// genai's stream ends: that silent truncation is what the error replaces).
// The stall is the endpoint's failure.
func TestStallMidStreamEndsWithTypedError(t *testing.T) {
	primary := newStallingGemini(t, twoChunksThenKeepAlives)
	m, fall, logs, _ := stallChain(t, primary, testPolicy())
	timers := newFakeTimers()
	failover.SetStallTimers(m, timers.start)

	done := runAsync(t.Context(), m, true)
	first := timers.next(t)
	idle1 := timers.next(t) // re-armed as the idle deadline after chunk 1
	idle2 := timers.next(t) // and after chunk 2
	if first.fakeTimer != idle1.fakeTimer || idle1.fakeTimer != idle2.fakeTimer || idle2.duration() != time.Second {
		t.Fatalf("the idle deadline is not the one timer re-armed for the configured 1s (got %v)", idle2.duration())
	}
	<-primary.stalled
	if !idle2.fire() {
		t.Fatal("the idle deadline was stopped by keep-alives")
	}
	r := <-done
	if len(r.errs) != 1 {
		t.Fatalf("errors %v, want one stall error", r.errs)
	}
	var se *failover.StallError
	if !errors.As(r.errs[0], &se) || !errors.Is(r.errs[0], failover.ErrStall) {
		t.Fatalf("error %T %v, want a *failover.StallError", r.errs[0], r.errs[0])
	}
	if se.Phase != failover.StallIdle || se.Chunks != 2 || se.TextBytes != len("Hello, wor") || se.Deadline != time.Second {
		t.Errorf("stall error %+v, want idle after 2 chunks of 10 bytes", se)
	}
	if !strings.Contains(se.Error(), "2 chunks") || !strings.Contains(se.Error(), "incomplete") {
		t.Errorf("message %q does not say how much was streamed", se.Error())
	}
	for _, resp := range r.resps {
		if !resp.Partial {
			t.Errorf("a complete answer was yielded after the stall: %+v", resp.Content)
		}
	}
	if len(r.resps) != 2 {
		t.Errorf("%d responses, want the 2 partial chunks", len(r.resps))
	}
	if fall.hits.Load() != 0 {
		t.Error("failed over after the first chunk")
	}
	if !strings.Contains(logs.String(), "reason=stall") {
		t.Errorf("no mid-stream log line with reason=stall:\n%s", logs)
	}
	<-primary.gone
	if st := m.Status()[0].Breaker; st.Counts.ConsecutiveFailures != 1 || m.Pending() != 0 {
		t.Errorf("primary's breaker counts %+v (pending %d), want the stall as one failure", st.Counts, m.Pending())
	}
}

// TestStallsOpenTheBreaker: stalls feed the endpoint's breaker like any
// failure: after ConsecutiveFailures (2 here) stalls the primary is open,
// and the next turn skips it at once (circuit_open), without calling it
// or arming a deadline for it.
func TestStallsOpenTheBreaker(t *testing.T) {
	primary := newStallingGemini(t, headersThenKeepAlives)
	m, fall, _, pKey := stallChain(t, primary, testPolicy())
	timers := newFakeTimers()
	failover.SetStallTimers(m, timers.start)
	for i := range 2 {
		done := runAsync(t.Context(), m, true)
		first := timers.next(t)
		<-primary.stalled
		first.fire()
		r := <-done
		if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "stall" {
			t.Fatalf("turn %d: %q %v", i, r.text(), meta(r.last(), failover.AttrFailoverReason))
		}
		<-primary.gone
		timers.drain() // the fallback's deadlines, never fired
	}
	if st := m.Status()[0]; st.Key != pKey || st.Breaker.State != registry.StateOpen {
		t.Fatalf("primary %s is %v after 2 stalls, want open", st.Key, st.Breaker.State)
	}
	before := timers.starts.Load()
	r := run(t.Context(), m, userReq("hi"), true)
	if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "circuit_open" {
		t.Fatalf("third turn: %q %v, want the fallback, circuit_open", r.text(), meta(r.last(), failover.AttrFailoverReason))
	}
	if primary.hits.Load() != 2 || fall.hits.Load() != 3 {
		t.Errorf("primary hits %d (want 2), fallback hits %d (want 3)", primary.hits.Load(), fall.hits.Load())
	}
	if n := timers.starts.Load() - before; n != 1 {
		t.Errorf("third turn started %d deadlines, want only the fallback's", n)
	}
	if tm := timers.next(t); tm.duration() != failover.DefaultFirstOutputTimeout {
		t.Errorf("third turn armed %v first: want the fallback's default deadline", tm.duration())
	}
}

// streamLLM is a model.LLM that streams chunks and then waits for its
// context, as a stalled HTTP stream does; delay precedes every chunk.
type streamLLM struct {
	chunks  []string
	delay   time.Duration
	thought bool
}

func (s *streamLLM) Name() string { return "stream-model" }

func (s *streamLLM) GenerateContent(ctx context.Context, _ *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, c := range s.chunks {
			select {
			case <-time.After(s.delay):
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			p := &genai.Part{Text: c, Thought: s.thought}
			if !yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{p}}, Partial: true}, nil) {
				return
			}
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

func virtualChain(t *testing.T, primary model.LLM, first, idle time.Duration) *failover.Model {
	t.Helper()
	reg := registry.MustNew(registry.WithPolicy(primaryKey, testPolicy()), registry.WithPolicy(fallbackKey, testPolicy()))
	m, err := failover.New("chat", reg, []failover.Endpoint{
		{LLM: primary, Key: primaryKey, FirstOutputTimeout: first, IdleTimeout: idle},
		{LLM: newFake("fallback-model", answer("from fallback")), Key: fallbackKey},
	}, failover.WithLogInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestStallDeadlinesInVirtualTime: on the real timers, in a synctest
// bubble (virtual time, and any goroutine left behind fails the test): a
// primary silent from the start fails over exactly at its first-output
// deadline; one that streams two chunks and falls silent ends exactly one
// idle deadline after its second chunk; thought parts are progress, so a
// reasoning model streaming its thoughts more often than the idle deadline
// is never a stall.
func TestStallDeadlinesInVirtualTime(t *testing.T) {
	t.Run("first-output", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := virtualChain(t, &streamLLM{}, 800*time.Millisecond, time.Second)
			start := time.Now()
			r := run(t.Context(), m, userReq("hi"), true)
			if el := time.Since(start); el != 800*time.Millisecond {
				t.Errorf("failed over after %v, want the 800ms first-output deadline", el)
			}
			if r.text() != "from fallback" || meta(r.last(), failover.AttrFailoverReason) != "stall" {
				t.Errorf("%q %v", r.text(), meta(r.last(), failover.AttrFailoverReason))
			}
		})
	})
	t.Run("idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := virtualChain(t, &streamLLM{chunks: []string{"a", "b"}, delay: 300 * time.Millisecond}, 800*time.Millisecond, 500*time.Millisecond)
			start := time.Now()
			r := run(t.Context(), m, userReq("hi"), true)
			if el := time.Since(start); el != 600*time.Millisecond+500*time.Millisecond {
				t.Errorf("ended after %v, want 2 chunks 300ms apart then the 500ms idle deadline", el)
			}
			var se *failover.StallError
			if len(r.errs) != 1 || !errors.As(r.errs[0], &se) || se.Chunks != 2 || se.Phase != failover.StallIdle {
				t.Fatalf("errors %v, want an idle stall after 2 chunks", r.errs)
			}
			if m.Pending() != 0 {
				t.Errorf("pending %d", m.Pending())
			}
		})
	})
	t.Run("thoughts-are-progress", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Ten thoughts 400ms apart: 4s in all, far past the 800ms
			// first-output deadline, never 500ms without one.
			llm := &streamLLM{chunks: strings.Split("abcdefghij", ""), delay: 400 * time.Millisecond, thought: true}
			m := virtualChain(t, llm, 800*time.Millisecond, 500*time.Millisecond)
			r := run(t.Context(), m, userReq("hi"), true)
			var se *failover.StallError
			if len(r.errs) != 1 || !errors.As(r.errs[0], &se) || se.Chunks != 10 {
				t.Fatalf("errors %v, want a stall only after the 10th thought", r.errs)
			}
		})
	})
	t.Run("off", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Negative deadlines turn stall detection off: the caller's
			// deadline ends the call, excluded (not the endpoint's fault).
			m := virtualChain(t, &streamLLM{}, -1, -1)
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			r := run(ctx, m, userReq("hi"), true)
			if len(r.errs) != 1 || !errors.Is(r.errs[0], context.DeadlineExceeded) {
				t.Fatalf("errors %v, want the caller's deadline", r.errs)
			}
			if st := m.Status()[0].Breaker; st.Counts.ConsecutiveFailures != 0 {
				t.Errorf("counts %+v", st.Counts)
			}
		})
	})
}

func newManualReader() *sdkmetric.ManualReader { return sdkmetric.NewManualReader() }

func meterProvider(r *sdkmetric.ManualReader) metric.MeterProvider {
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
}

// counterValue sums the data points of the int64 counter name whose
// attribute k is v.
func counterValue(t *testing.T, r *sdkmetric.ManualReader, name, k, v string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				if got, ok := dp.Attributes.Value(attribute.Key(k)); ok && got.AsString() == v {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestGenaiLocalRequestErrorChargesNoOne: genai refuses, before sending
// anything, a parameter its backend does not take (labels on the Gemini
// API). That error is the request's: it is yielded as it is, charged to no
// endpoint and not failed over (before, it was a server_error failure that
// failed over, and enough of them opened a healthy endpoint).
func TestGenaiLocalRequestErrorChargesNoOne(t *testing.T) {
	primary := newStallingGemini(t, neverAnswers)
	m, fall, _, _ := stallChain(t, primary, testPolicy())
	for range 3 {
		req := userReq("hi")
		req.Config = &genai.GenerateContentConfig{Labels: map[string]string{"team": "a"}}
		r := run(t.Context(), m, req, false)
		if len(r.errs) != 1 || !strings.Contains(r.errs[0].Error(), "labels parameter is only supported") {
			t.Fatalf("errors %v, resps %d: want genai's local error", r.errs, len(r.resps))
		}
	}
	if st := m.Status()[0].Breaker; st.State != registry.StateClosed || st.Counts.Failures != 0 {
		t.Errorf("primary %v %+v, want closed with no failure", st.State, st.Counts)
	}
	if primary.hits.Load() != 0 || fall.hits.Load() != 0 {
		t.Errorf("primary hits %d, fallback hits %d: nothing should have been sent", primary.hits.Load(), fall.hits.Load())
	}
}
