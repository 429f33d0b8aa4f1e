package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool/functiontool"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
)

// hangTool is an "enrich" tool on the "enrichment" dependency whose calls,
// while hanging is set, signal started and wait for release (a dependency
// that stopped answering); each released call returns what release carries.
type hangTool struct {
	hanging atomic.Bool
	started chan struct{}
	release chan error
	calls   atomic.Int64
}

func newHangTool() *hangTool {
	return &hangTool{started: make(chan struct{}, 256), release: make(chan error)}
}

func (h *hangTool) run(ctx agent.ToolContext, _ struct{}) (map[string]any, error) {
	h.calls.Add(1)
	if h.hanging.Load() {
		h.started <- struct{}{}
		select {
		case err := <-h.release:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return map[string]any{"enriched": true}, nil
}

// newHangEnv is env (e2e_test.go) around hangTool instead of the billing
// backend: the real runner, the scripted model, the plugin registered first.
func newHangEnv(t *testing.T, h *hangTool, step scripted.Step, opts ...breaker.Option) *env {
	t.Helper()
	e := newEnv(t, step, opts...)
	enrich, err := functiontool.New(functiontool.Config{Name: "enrich", Description: "Enrich a record."}, h.run)
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.FromHandler(e.h, "")
	if err != nil {
		t.Fatal(err)
	}
	e.useTools(p, enrich)
	return e
}

// fanOut makes n parallel calls in one model response, then answers with
// how many results it got.
func fanOut(n int, call func(i int) scripted.Call) scripted.Step {
	return func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text(fmt.Sprintf("%d results", len(rs)))
		}
		calls := make([]scripted.Call, n)
		for i := range calls {
			calls[i] = call(i)
		}
		return scripted.CallTools(calls...)
	}
}

// invoice is a get_invoice call for invoice i.
func invoice(i int) scripted.Call {
	return scripted.Call{Name: "get_invoice", Args: map[string]any{"id": fmt.Sprint(i)}}
}

// enrichOnce calls enrich once, then answers.
func enrichOnce() scripted.Step { return callOnce("enrich", map[string]any{}) }

// payloads returns the unavailable payloads among a turn's tool responses.
func payloads(t *testing.T, evs []*session.Event) []degrade.Info {
	t.Helper()
	var out []degrade.Info
	for _, r := range functionResponses(evs) {
		if info, ok := degrade.Parse(r.Response); ok {
			out = append(out, info)
		}
	}
	return out
}

// TestHangingDependencyTripsWithinSlowThreshold: the dependency stops
// answering; a turn every 100ms (virtual time) sends a call that hangs. The
// breaker opens with cause slow_calls once three calls have been outstanding
// for the 1s threshold — long before any returns — and the next turn gets
// the unavailable payload. When the hung calls finally return (failures at
// their timeout, one success), none counts twice.
func TestHangingDependencyTripsWithinSlowThreshold(t *testing.T) {
	h := newHangTool()
	e := newHangEnv(t, h, enrichOnce(), breaker.WithDependency("enrichment", "enrich"),
		breaker.WithPolicy("enrichment", registry.Policy{
			SlowInFlight: time.Second, SlowInFlightCalls: 3, CallTimeout: 5 * time.Second,
			ConsecutiveFailures: 100, DisableFailureRate: true, NoJitter: true,
		}))
	trans := make(chan registry.Transition, 16)
	defer e.reg.Subscribe(func(tr registry.Transition) { trans <- tr })()
	h.hanging.Store(true)
	start := e.clk.Now()
	var wg sync.WaitGroup
	var refused []degrade.Info
	for i := 0; i < 40 && refused == nil; i++ {
		if i > 0 {
			e.clk.Advance(100 * time.Millisecond)
		}
		done := make(chan []*session.Event, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, _ := e.turn(context.Background(), "enrich")
			done <- evs
		}()
		select {
		case <-h.started: // the call reached the dependency and hangs
		case evs := <-done:
			refused = payloads(t, evs)
			if len(refused) != 1 {
				t.Fatalf("turn %d ended without reaching the dependency and without a payload", i)
			}
		}
	}
	b := e.breaker("enrichment")
	tripAt := e.clk.Now().Sub(start)
	if refused == nil || tripAt > 1300*time.Millisecond {
		t.Fatalf("not refused within the threshold: refused=%v at %v", refused, tripAt)
	}
	if refused[0].Reason != degrade.ReasonCircuitOpen {
		t.Fatalf("payload reason = %v", refused[0].Reason)
	}
	hung := int(h.calls.Load())
	if tr := <-trans; tr.To != registry.StateOpen || tr.Cause != registry.CauseSlowCalls {
		t.Fatalf("transition = %+v, want open with cause slow_calls", tr)
	}
	// The hung calls return: failures at their timeout, and one success.
	e.clk.Advance(5 * time.Second)
	for i := range hung {
		var err error
		if i != 0 {
			err = errors.New("upstream timeout")
		}
		h.release <- err
	}
	wg.Wait()
	cc, c := b.ContainCounts(), b.Counts()
	if cc.SlowVerdicts != 3 || cc.LateOutcomes != 3 || cc.InFlight != 0 {
		t.Fatalf("contain counts = %+v, want 3 judged, 3 late outcomes excluded, none in flight", cc)
	}
	if c.Trips != 1 || c.Failures != 0 || c.Successes != 0 || b.State() != registry.StateOpen {
		t.Fatalf("late outcomes counted: %+v (%v)", c, b.State())
	}
	select {
	case tr := <-trans:
		t.Fatalf("late outcomes moved the breaker: %+v", tr)
	default:
	}
	e.assertNoPending()
}

// TestBulkheadRejectsThe21stConcurrentCall: one model response with 21
// parallel calls to a dependency capped at 20. Twenty run; the 21st gets the
// payload with reason saturated and retry after 1s; nothing counts as a
// failure and the breaker stays closed; telemetry sees the refusal.
func TestBulkheadRejectsThe21stConcurrentCall(t *testing.T) {
	const n = 21
	step := fanOut(n, func(int) scripted.Call { return scripted.Call{Name: "enrich", Args: map[string]any{}} })
	h := newHangTool()
	obs := &reasonObserver{seen: make(chan struct{}, n)}
	reader := sdkmetric.NewManualReader()
	e := newHangEnv(t, h, step, breaker.WithDependency("enrichment", "enrich"), breaker.WithTurnLimit(100), breaker.WithObserver(obs),
		breaker.WithToolRepeatLimit("enrich", callbacks.NoRepeatLimit), // 21 identical calls at once, on purpose
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		breaker.WithPolicy("enrichment", registry.Policy{MaxConcurrent: 20, ConsecutiveFailures: 1, DisableSlowInFlight: true}))
	h.hanging.Store(true)
	done := make(chan []*session.Event)
	go func() { done <- e.mustTurn("twenty-one at once") }()
	for range 20 {
		<-h.started
	}
	<-obs.seen // the 21st was refused while twenty were in flight
	for range 20 {
		h.release <- nil
	}
	evs := <-done
	ps := payloads(t, evs)
	if len(ps) != 1 || ps[0].Reason != degrade.ReasonSaturated || ps[0].RetryAfterSeconds != 1 {
		t.Fatalf("payloads = %+v, want one saturated, retry after 1s", ps)
	}
	b := e.breaker("enrichment")
	cc, c := b.ContainCounts(), b.Counts()
	if cc.Saturated != 1 || cc.PeakInFlight != 20 || cc.InFlight != 0 || h.calls.Load() != 20 {
		t.Fatalf("contain counts = %+v, tool calls = %d", cc, h.calls.Load())
	}
	if c.Failures != 0 || c.Trips != 0 || c.Successes != 20 || b.State() != registry.StateClosed {
		t.Fatalf("saturation counted against the dependency (a single failure would trip it): %+v", c)
	}
	if got := obs.reasons(); len(got) != 1 || got[0] != degrade.ReasonSaturated {
		t.Fatalf("observer saw %v", got)
	}
	if got := metrics(t, reader)["adkbreaker.short_circuits"]["dependency=enrichment,mode=enforce,reason=saturated,terminal=false,tool=enrich"]; got != 1 {
		t.Fatalf("short_circuits metric = %v", metrics(t, reader)["adkbreaker.short_circuits"])
	}
	e.assertNoPending()
}

// reasonObserver records the reasons of short-circuits and signals seen.
type reasonObserver struct {
	mu   sync.Mutex
	rs   []degrade.Reason
	seen chan struct{}
}

func (o *reasonObserver) ShortCircuit(_ context.Context, ev callbacks.ShortCircuitEvent) {
	o.mu.Lock()
	o.rs = append(o.rs, ev.Reason)
	o.mu.Unlock()
	o.seen <- struct{}{}
}
func (o *reasonObserver) TurnEnded(context.Context, callbacks.TurnEndEvent) {}
func (o *reasonObserver) reasons() []degrade.Reason {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]degrade.Reason(nil), o.rs...)
}

// TestCountWindowTripsAtTheDocumentedPoint: 50% over the last 20 calls with
// the consecutive gate off (the reference incident's policy). Ten good calls, then the backend
// fails: ten failures in a row do not trip it (the consecutive gate would at
// 5); the 10th failure makes 10 of the last 20 and opens it; the 21st call
// is refused.
func TestCountWindowTripsAtTheDocumentedPoint(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}),
		breaker.WithPolicy("billing-api", registry.Policy{CountWindow: 20, FailureRate: 0.5, DisableConsecutiveFailures: true, NoJitter: true}))
	for range 10 {
		e.mustTurn("ok")
	}
	e.backend.SetMode(fakebackend.Down)
	b := e.breaker("billing-api")
	for i := 1; i <= 10; i++ {
		e.mustTurn("failing")
		if st := b.State(); (st == registry.StateOpen) != (i == 10) {
			t.Fatalf("after %d failures among the last 20 calls: %v", i, st)
		}
	}
	evs := e.mustTurn("refused")
	if ps := payloads(t, evs); len(ps) != 1 || ps[0].Reason != degrade.ReasonCircuitOpen {
		t.Fatalf("payloads = %+v", ps)
	}
	if e.backend.Hits() != 20 {
		t.Fatalf("backend hits = %d, want 20", e.backend.Hits())
	}
	e.assertNoPending()
}

// TestConsecutiveGateSwitchedOff: with the gate off and the time-window rate
// needing 20 calls, 19 failures in a row leave the breaker closed; the 20th
// opens it.
func TestConsecutiveGateSwitchedOff(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}),
		breaker.WithPolicy("billing-api", registry.Policy{DisableConsecutiveFailures: true, Window: time.Hour}))
	e.backend.SetMode(fakebackend.Down)
	for i := 1; i <= 20; i++ {
		e.mustTurn("failing")
		if st := e.breaker("billing-api").State(); (st == registry.StateOpen) != (i == 20) {
			t.Fatalf("after %d failures in a row: %v", i, st)
		}
	}
}

// TestHealthCheckProbeReplacesUserCall: when the hold expires, the
// dependency's health check is the probe; the user's call is refused with
// half_open_busy and a retry after of at most the call timeout, the
// backend is not called for it, and the check's success closes the breaker.
func TestHealthCheckProbeReplacesUserCall(t *testing.T) {
	var checks atomic.Int64
	proceed := make(chan struct{})
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}),
		breaker.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 3, DisableFailureRate: true, CallTimeout: 5 * time.Second, NoJitter: true}),
		breaker.WithHealthCheck("billing-api", func(ctx context.Context) error {
			checks.Add(1)
			select {
			case <-proceed:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
	closed := make(chan struct{}, 1)
	defer e.reg.Subscribe(func(tr registry.Transition) {
		if tr.To == registry.StateClosed {
			closed <- struct{}{}
		}
	})()
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("x")
	}
	e.backend.SetMode(fakebackend.Up)
	e.clk.Advance(30 * time.Second)
	evs := e.mustTurn("hold expired")
	ps := payloads(t, evs)
	if len(ps) != 1 || ps[0].Reason != degrade.ReasonHalfOpenBusy || ps[0].RetryAfterSeconds > 5 {
		t.Fatalf("payloads = %+v, want half_open_busy within the 5s call timeout", ps)
	}
	if started := e.breaker("billing-api").ContainCounts().HealthChecks; e.backend.Hits() != 3 || started != 1 {
		t.Fatalf("hits = %d, health checks = %d: the user's call must not be the probe", e.backend.Hits(), started)
	}
	close(proceed)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the health check's success did not close the breaker")
	}
	e.mustTurn("closed again")
	b := e.breaker("billing-api")
	if cc := b.ContainCounts(); e.backend.Hits() != 4 || checks.Load() != 1 || cc.HealthChecks != 1 || cc.HealthCheckFailures != 0 {
		t.Fatalf("hits = %d, counts = %+v", e.backend.Hits(), cc)
	}
	e.assertNoPending()
}

// TestRetryAfterWhileProbeOutIsAtMostCallTimeout: while a probe is out, the
// payload's retry.after_seconds is the time left until the probe's timeout
// (the 5s call timeout), not the 60s probe lease.
func TestRetryAfterWhileProbeOutIsAtMostCallTimeout(t *testing.T) {
	step := fanOut(2, invoice)
	gate := make(chan struct{})
	obs := &gateObserver{after: 1, gate: gate}
	e := newEnv(t, step, breaker.WithTurnLimit(100), breaker.WithObserver(obs),
		breaker.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true, CallTimeout: 5 * time.Second, NoJitter: true}))
	e.backend.SetMode(fakebackend.Down)
	e.mustTurn("trip")
	obs.count.Store(0)
	e.backend.SetMode(fakebackend.Up)
	e.backend.SetGate(gate) // the probe is held until the other call was refused
	e.clk.Advance(30 * time.Second)
	ps := payloads(t, e.mustTurn("probe"))
	if len(ps) != 1 || ps[0].Reason != degrade.ReasonHalfOpenBusy {
		t.Fatalf("payloads = %+v", ps)
	}
	if ps[0].RetryAfterSeconds > 5 {
		t.Fatalf("retry.after_seconds = %d while a probe is out, want ≤ the 5s call timeout", ps[0].RetryAfterSeconds)
	}
}
