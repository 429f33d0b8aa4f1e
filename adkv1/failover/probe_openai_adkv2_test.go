//go:build ignore

package failover_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// all returns the events so far.
func (l *eventLog) all() []failover.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]failover.Event(nil), l.ev...)
}

// failoverCount sums MetricFailovers' data points with the given reason.
func failoverCount(t *testing.T, reader *sdkmetric.ManualReader, reason string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != failover.MetricFailovers {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				if v, ok := dp.Attributes.Value(attribute.Key("reason")); ok && v.AsString() == reason {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestOpenAIProbeRetryAfterIsItsExpectedTime: an OpenAI endpoint (ADK v2's
// openaimodel, openai-go, the Responses API on a fake server) whose calls
// took 0.8 s is opened by a hinted 429; once the hint has passed, its probe
// is in flight, and the calls turned away meanwhile are labelled
// circuit_open (response metadata, failover event, log line, metric) with a
// retry time of about a second — the endpoint's healthy latency less the
// time the probe has run, at least registry.MinProbeRetryAfter — where
// before they were told the probe's first-output deadline (5 minutes by
// default, less the time it had run).
func TestOpenAIProbeRetryAfterIsItsExpectedTime(t *testing.T) {
	srv := newFakeResponses(t, oaGated)
	logs := &logBuf{}
	reader := sdkmetric.NewManualReader()
	var events eventLog
	m, _, clk := openAIChain(t, srv, tripOnHint(failover.DefaultPolicy()), func(e *config.ModelEndpoint) {
		e.FirstOutputTimeout, e.IdleTimeout = 0, 0 // the defaults: 5m to the first output
	}, failover.WithLogger(logs.logger()), failover.WithOnFailover(events.add),
		failover.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	const latency = 800 * time.Millisecond
	for i := range 10 {
		done := runAsync(t.Context(), m, true)
		<-srv.stalled // admitted, at the server
		clk.Advance(latency)
		srv.gate <- struct{}{}
		if r := <-done; r.err() != nil || r.text() != "from primary" {
			t.Fatalf("healthy call %d: %q %v", i, r.text(), r.err())
		}
	}
	srv.mode.Store(int32(oaHinted429))
	if r := run(t.Context(), m, userReq("hi"), false); meta(r.last(), failover.AttrFailoverReason) != "rate_limited" {
		t.Fatalf("hinted 429: %v", meta(r.last(), failover.AttrFailoverReason))
	}
	if st := m.Status()[0]; st.Breaker.State != registry.StateOpen || st.Breaker.Cause != registry.CauseRetryHint {
		t.Fatalf("primary %v cause %v after the hinted 429", st.Breaker.State, st.Breaker.Cause)
	}
	clk.Advance(6 * time.Second) // past the 5s hint
	srv.mode.Store(int32(oaGated))
	probe := runAsync(t.Context(), m, true)
	<-srv.stalled // the probe is at the primary
	clk.Advance(300 * time.Millisecond)

	turned := run(t.Context(), m, userReq("hi"), false)
	if got := meta(turned.last(), failover.AttrFailoverReason); got != "circuit_open" || turned.text() != "from fallback" {
		t.Errorf("turned-away call: reason %v, answer %q; want circuit_open from the fallback", got, turned.text())
	}
	ev := events.last(t)
	if ev.Reason != failover.ReasonCircuitOpen || ev.RetryAfter != registry.MinProbeRetryAfter {
		t.Errorf("turned-away event: %s, retry after %v; want circuit_open, %v (p99 ≈ 0.86s less the 0.3s the probe ran, floored), not the 5m first-output deadline",
			ev.Reason, ev.RetryAfter, registry.MinProbeRetryAfter)
	}
	if line := lastLine(logs.String(), "adkbreaker: model failover"); !strings.Contains(line, "reason=circuit_open") || !strings.Contains(line, "retry_after=1s") {
		t.Errorf("failover log line %q, want reason=circuit_open retry_after=1s", line)
	}
	if n := failoverCount(t, reader, "circuit_open"); n != 1 {
		t.Errorf("%s{reason=circuit_open} = %d, want 1", failover.MetricFailovers, n)
	}
	if w := m.Status()[0].Breaker.RetryAfter; w != registry.MinProbeRetryAfter {
		t.Errorf("primary's breaker: retry after %v while its probe is out, want %v", w, registry.MinProbeRetryAfter)
	}
	srv.gate <- struct{}{}
	if p := <-probe; p.text() != "from primary" {
		t.Fatalf("probe answered %q %v", p.text(), p.err())
	}
	if st := m.Status()[0].Breaker; st.State != registry.StateClosed {
		t.Errorf("primary %v after its probe succeeded", st.State)
	}
}

// lastLine returns the last line of s containing substr.
func lastLine(s, substr string) string {
	var out string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = l
		}
	}
	return out
}

// notifyTransport signals after every round trip of its base.
type notifyTransport struct {
	base http.RoundTripper
	done chan struct{}
}

func (n *notifyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.base.RoundTrip(req)
	select {
	case n.done <- struct{}{}:
	default:
	}
	return resp, err
}

// TestOpenAIHintSurvivesOpenAIGoRetries: an OpenAI endpoint built in Go
// with openai-go's default retries (2) and RetryAfterTransport. Every call
// is answered 429 with Retry-After-Ms 5000, which openai-go sleeps out;
// the endpoint's Timeout (or its first-output deadline) cuts the call
// meanwhile. The 429 the transport saw still decides the call: it fails
// over as rate_limited with the hint, and sustained 429s open the endpoint
// on its RetryHintFailures-th call (5 in failover.DefaultPolicy), cause
// retry_hint, for at least the hint. Before, each call ended as a timeout
// (or stall) without a hint, and only the 10th opened the endpoint (cause
// trip, for open_for).
func TestOpenAIHintSurvivesOpenAIGoRetries(t *testing.T) {
	for _, cut := range []string{"timeout", "stall"} {
		t.Run(cut, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", "")
			t.Setenv("OPENAI_API_KEY", "")
			srv := newFakeResponses(t, oaHinted429)
			rt := &notifyTransport{base: failover.RetryAfterTransport(nil), done: make(chan struct{}, 1)}
			base := srv.srv.URL + "/v1"
			llm, err := openaimodel.NewModel(t.Context(), "gpt-test", &openaimodel.ClientConfig{
				BaseURL: base, APIKey: "sk-test", HTTPClient: &http.Client{Transport: rt},
				Options: []option.RequestOption{option.WithMaxRetries(2)}, // openai-go's default, spelled out
			})
			if err != nil {
				t.Fatal(err)
			}
			key := failover.EndpointKey("gpt-test", "openai", base)
			ep := failover.Endpoint{LLM: llm, Key: key}
			if cut == "timeout" {
				ep.Timeout = 30 * time.Second // a fake timer: the test passes it
			}
			clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			reg := registry.MustNew(append(failover.PolicyOptions(key, fallbackKey), registry.WithClock(clk))...)
			var events eventLog
			fall := newFake("fallback-model", answer("from fallback"))
			m, err := failover.New("chat", reg, []failover.Endpoint{ep, {LLM: fall, Key: fallbackKey}},
				failover.WithLogger(slog.New(slog.DiscardHandler)), failover.WithLogInterval(-1), failover.WithOnFailover(events.add))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			timers, timeouts := newFakeTimers(), newFakeTimers()
			failover.SetStallTimers(m, timers.start)
			failover.SetTimeoutTimers(m, timeouts.start)
			hintFailures := failover.DefaultPolicy().RetryHintFailures
			for i := range hintFailures {
				done := runAsync(t.Context(), m, false)
				first := timers.next(t) // the first-output deadline
				var timeout arming
				if cut == "timeout" {
					timeout = timeouts.next(t)
				}
				<-rt.done // the 429 was seen; openai-go now sleeps out its 5s
				if cut == "stall" && !first.fire() {
					t.Fatal("first-output deadline stopped before any output")
				}
				if cut == "timeout" && !timeout.fire() {
					t.Fatal("Timeout stopped before any output")
				}
				r := <-done
				timers.drain() // the fallback's deadline
				if got := meta(r.last(), failover.AttrFailoverReason); got != "rate_limited" || r.text() != "from fallback" {
					t.Fatalf("call %d: reason %v answer %q, want rate_limited from the fallback", i, got, r.text())
				}
				<-srv.gone
				if i < hintFailures-1 && m.Status()[0].Breaker.State != registry.StateClosed {
					t.Fatalf("primary opened by call %d of %d", i+1, hintFailures)
				}
			}
			if n := srv.hits.Load(); n != int64(hintFailures) {
				t.Errorf("%d requests for %d calls: openai-go was to be cut while sleeping out each hint", n, hintFailures)
			}
			st := m.Status()[0]
			if st.Breaker.State != registry.StateOpen || st.Breaker.Cause != registry.CauseRetryHint || st.Hold < 5*time.Second {
				t.Errorf("primary %v cause %v hold %v, want open (retry_hint) for the 5s hint", st.Breaker.State, st.Breaker.Cause, st.Hold)
			}
			for i, ev := range events.all() {
				if ev.Reason != failover.ReasonRateLimited || ev.RetryAfter < 5*time.Second {
					t.Errorf("failover %d: %s retry after %v, want rate_limited with the 5s hint", i, ev.Reason, ev.RetryAfter)
				}
			}
			// Open: the next call never reaches the primary.
			r := run(t.Context(), m, userReq("hi"), false)
			if got := meta(r.last(), failover.AttrFailoverReason); got != "rate_limited" || srv.hits.Load() != int64(hintFailures) {
				t.Errorf("while held: reason %v, %d requests", got, srv.hits.Load())
			}
		})
	}
}
