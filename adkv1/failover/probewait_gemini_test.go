package failover_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestGeminiProbeRetryAfterIsItsExpectedTime: through the real genai client
// and ADK's model/gemini, a Gemini primary whose calls took 0.8 s is opened
// by a 429 with a RetryInfo of 30 s; while its probe is in flight, the
// calls turned away are labelled circuit_open with a retry time of about a
// second (its healthy latency less the time the probe has run, at least
// registry.MinProbeRetryAfter), not the probe's 5-minute first-output
// deadline.
func TestGeminiProbeRetryAfterIsItsExpectedTime(t *testing.T) {
	clearGenaiEnv(t)
	arrived, gate := make(chan struct{}, 1), make(chan struct{})
	primary := &fakeGemini{}
	primary.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		primary.handle(w, r)
	}))
	t.Cleanup(primary.srv.Close)
	primary.setDefault(reply{chunks: []string{"from primary"}})
	e := config.ModelEndpoint{Model: "primary-model", Backend: config.BackendGeminiAPI, BaseURL: primary.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY"}
	pKey := registry.Key(e.Identity())
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	pol := tripOnHint(failover.DefaultPolicy())
	reg := registry.MustNew(registry.WithClock(clk), registry.WithPolicy(pKey, pol), registry.WithPolicy(fallbackKey, pol))
	built, err := failover.FromConfig(t.Context(), "primary", config.ModelChain{Endpoints: []config.ModelEndpoint{e}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	var events eventLog
	fall := newFake("fallback-model", answer("from fallback"))
	m, err := failover.New("chat", reg, append(built.Endpoints(), failover.Endpoint{LLM: fall, Key: fallbackKey}),
		failover.WithLogger((&logBuf{}).logger()), failover.WithLogInterval(-1), failover.WithOnFailover(events.add))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	call := func(stream bool) result {
		done := runAsync(t.Context(), m, stream)
		<-arrived
		clk.Advance(800 * time.Millisecond)
		gate <- struct{}{}
		return <-done
	}
	for i := range 10 {
		if r := call(i%2 == 0); r.err() != nil || r.text() != "from primary" {
			t.Fatalf("healthy call %d: %q %v", i, r.text(), r.err())
		}
	}
	primary.script(reply{status: http.StatusTooManyRequests, body: body429})
	if r := call(false); meta(r.last(), failover.AttrFailoverReason) != "rate_limited" {
		t.Fatalf("429: %v", meta(r.last(), failover.AttrFailoverReason))
	}
	clk.Advance(31 * time.Second) // past the 30s RetryInfo
	probe := runAsync(t.Context(), m, true)
	<-arrived
	clk.Advance(300 * time.Millisecond)
	turned := run(t.Context(), m, userReq("hi"), false)
	if got := meta(turned.last(), failover.AttrFailoverReason); got != "circuit_open" {
		t.Errorf("turned-away call labelled %v, want circuit_open", got)
	}
	if ev := events.last(t); ev.Reason != failover.ReasonCircuitOpen || ev.RetryAfter != registry.MinProbeRetryAfter {
		t.Errorf("turned-away event: %s, retry after %v; want circuit_open, %v", ev.Reason, ev.RetryAfter, registry.MinProbeRetryAfter)
	}
	gate <- struct{}{}
	if p := <-probe; p.text() != "from primary" {
		t.Fatalf("probe answered %q %v", p.text(), p.err())
	}
	if st := m.Status()[0].Breaker; st.State != registry.StateClosed {
		t.Errorf("primary %v after its probe succeeded", st.State)
	}
}

// eventLog collects failover events.
type eventLog struct {
	mu sync.Mutex
	ev []failover.Event
}

func (l *eventLog) add(_ context.Context, ev failover.Event) {
	l.mu.Lock()
	l.ev = append(l.ev, ev)
	l.mu.Unlock()
}

func (l *eventLog) last(t *testing.T) failover.Event {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ev) == 0 {
		t.Fatal("no failover event")
	}
	return l.ev[len(l.ev)-1]
}
