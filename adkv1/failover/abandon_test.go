package failover_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// newHangEnv is a two-endpoint chain whose primary has a Timeout (and a
// cap on abandoned calls), in the caller's synctest bubble.
func newHangEnv(t *testing.T, maxAbandoned int, opts ...failover.Option) (*fakeLLM, *fakeLLM, *failover.Model) {
	t.Helper()
	reg := registry.MustNew(registry.WithClock(registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))),
		registry.WithPolicy(primaryKey, failover.DefaultPolicy()), registry.WithPolicy(fallbackKey, failover.DefaultPolicy()))
	primary := newFake("primary-model", answer("from primary"))
	fall := newFake("fallback-model", answer("from fallback"))
	opts = append([]failover.Option{failover.WithLogger((&logBuf{}).logger()), failover.WithLogInterval(-1)}, opts...)
	m, err := failover.New("chat", reg, []failover.Endpoint{
		{LLM: primary, Key: primaryKey, Timeout: 200 * time.Millisecond, MaxAbandoned: maxAbandoned},
		{LLM: fall, Key: fallbackKey},
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return primary, fall, m
}

// TestTimeoutBoundsAnEndpointThatIgnoresItsContext: the endpoint's Timeout
// bounds the caller even when the endpoint's call ignores its context; the
// abandoned call is counted, its late answer dropped, and its goroutine
// ends when the call returns (synctest fails on any goroutine left behind).
func TestTimeoutBoundsAnEndpointThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		primary, _, m := newHangEnv(t, 0, failover.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		release := make(chan struct{})
		primary.script(step{hang: release})
		start := time.Now()
		r := run(t.Context(), m, userReq("hi"), false)
		if el := time.Since(start); el != 200*time.Millisecond {
			t.Fatalf("the turn took %v, want the 200ms Timeout", el)
		}
		if r.text() != "from fallback" || r.err() != nil {
			t.Fatalf("result %q, %v; want the fallback", r.text(), r.err())
		}
		if got := m.Abandoned(); got != 1 {
			t.Fatalf("Abandoned = %d, want 1", got)
		}
		if got := abandonedMetric(t, reader); got != 1 {
			t.Fatalf("%s = %d, want 1", failover.MetricAbandoned, got)
		}
		if n := goroutinesIn("failover.(*boundedRun).run"); n != 1 {
			t.Fatalf("%d abandoned call goroutines while the call hangs, want 1", n)
		}
		close(release) // the hung call finally answers: dropped
		synctest.Wait()
		if got := m.Abandoned(); got != 0 {
			t.Fatalf("Abandoned after the call returned = %d", got)
		}
		// The abandoned call's goroutine has ended. (Counted by its frame,
		// not by runtime.NumGoroutine: that counts the whole process, the
		// runtime's own cleanup goroutines and other tests' leftovers too.)
		if n := goroutinesIn("failover.(*boundedRun).run"); n != 0 {
			t.Fatalf("%d abandoned call goroutine(s) still running", n)
		}
		if m.Pending() != 0 {
			t.Fatalf("Pending = %d", m.Pending())
		}
	})
}

// TestAbandonedCallsAreCapped: while MaxAbandoned calls of an endpoint still
// hang, it is skipped instead of called.
func TestAbandonedCallsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary, _, m := newHangEnv(t, 2)
		release := make(chan struct{})
		primary.setDefault(step{hang: release})
		for i := range 4 {
			if r := run(t.Context(), m, userReq("hi"), false); r.text() != "from fallback" {
				t.Fatalf("call %d: %q", i, r.text())
			}
		}
		if got := primary.calls.Load(); got != 2 {
			t.Fatalf("primary called %d times, want 2 (then skipped at the cap)", got)
		}
		if got := m.Abandoned(); got != 2 {
			t.Fatalf("Abandoned = %d, want 2", got)
		}
		close(release)
		synctest.Wait()
		if got := m.Abandoned(); got != 0 {
			t.Fatalf("Abandoned = %d after release", got)
		}
	})
}

// TestCallerCancellationAbandonsWithoutBlame: the caller's own cancellation
// also ends the wait; it is not the endpoint's failure.
func TestCallerCancellationAbandonsWithoutBlame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary, _, m := newHangEnv(t, 0)
		release := make(chan struct{})
		primary.script(step{hang: release})
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		r := run(ctx, m, userReq("hi"), false)
		if r.err() == nil {
			t.Fatalf("result %q, want the caller's cancellation", r.text())
		}
		st := m.Status()[0].Breaker
		if st.Counts.Failures != 0 {
			t.Fatalf("counts %+v: the caller's cancellation was blamed on the endpoint", st.Counts)
		}
		close(release)
		synctest.Wait()
	})
}

func abandonedMetric(t *testing.T, r sdkmetric.Reader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if s, ok := mt.Data.(metricdata.Sum[int64]); ok && mt.Name == failover.MetricAbandoned {
				for _, p := range s.DataPoints {
					n += p.Value
				}
			}
		}
	}
	return n
}

// goroutinesIn counts the goroutines of the process whose stack has a frame
// of fn (a qualified function name as runtime.Stack prints it).
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn+"(") {
			n++
		}
	}
	return n
}
