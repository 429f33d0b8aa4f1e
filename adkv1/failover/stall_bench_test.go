package failover_test

import (
	"errors"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// BenchmarkStallOvershoot measures, over real loopback sockets and the real
// genai client, how far past its deadline a stall ends: a primary that
// answers headers and then only keep-alives (first-output, 50ms) fails
// over, and one that streams two chunks and then only keep-alives (idle,
// 50ms) ends with a StallError. Reported: overshoot-ms, the mean time past
// the deadline, and max-overshoot-ms (the bound is 100ms). Durations
// are measured here, never asserted in tests.
//
//	go test -run '^$' -bench StallOvershoot -benchtime 50x ./failover/
func BenchmarkStallOvershoot(b *testing.B) {
	const deadline = 50 * time.Millisecond
	for _, bc := range []struct {
		name string
		mode stallMode
	}{
		{"first-output", headersThenKeepAlives},
		{"idle", twoChunksThenKeepAlives},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"} {
				b.Setenv(k, "")
			}
			b.Setenv("FAKE_GEMINI_KEY", "test-key")
			srv := newStallingGemini(b, bc.mode)
			e := config.ModelEndpoint{Model: "primary-model", Backend: config.BackendGeminiAPI, BaseURL: srv.srv.URL, APIKeyEnv: "FAKE_GEMINI_KEY",
				FirstOutputTimeout: config.Duration(deadline), IdleTimeout: config.Duration(deadline)}
			pKey := registry.Key(e.Identity())
			pol := failover.DefaultPolicy()
			pol.ConsecutiveFailures, pol.DisableFailureRate = 1<<30, true // never open: every call stalls
			reg := registry.MustNew(registry.WithPolicy(pKey, pol), registry.WithPolicy(fallbackKey, pol))
			one, err := failover.FromConfig(b.Context(), "primary", config.ModelChain{Endpoints: []config.ModelEndpoint{e}}, reg)
			if err != nil {
				b.Fatal(err)
			}
			eps := append(one.Endpoints(), failover.Endpoint{LLM: newFake("fallback-model", answer("from fallback")), Key: fallbackKey})
			m, err := failover.New("chat", reg, eps, failover.WithLogInterval(time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			var sum, worst time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				var end time.Time
				var last time.Time // when the last chunk reached the caller
				stalled := false
				for resp, err := range m.GenerateContent(b.Context(), userReq("hi"), true) {
					if err != nil {
						stalled = errors.Is(err, failover.ErrStall)
						end = time.Now()
						break
					}
					if resp.Partial {
						last = time.Now()
						continue
					}
					if meta(resp, failover.AttrFailoverReason) == "stall" {
						stalled = true
					}
					end = time.Now()
				}
				if !stalled {
					b.Fatal("the call did not end in a stall")
				}
				from := start
				if bc.mode == twoChunksThenKeepAlives {
					from = last
				}
				over := end.Sub(from) - deadline
				sum += over
				worst = max(worst, over)
				<-srv.stalled
				<-srv.gone
			}
			b.ReportMetric(float64(sum.Microseconds())/1000/float64(b.N), "overshoot-ms")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-overshoot-ms")
		})
	}
}
