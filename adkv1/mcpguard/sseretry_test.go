package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestSSERetryBounded: a server that ends a call's SSE stream asking, with
// retry:, for a wait before the client resumes it. A wait longer than the
// operation has left is declined at once, through the real runner and
// plugin, with an error naming the wait and the budget, counted as one
// failure with the server's hint (not as a timeout); one that fits is
// waited out and the call resumes; retry: 0 is no hint (the go-sdk's own
// backoff applies).
func TestSSERetryBounded(t *testing.T) {
	forProtocols(t, sseRetryBounded)
}

func sseRetryBounded(t *testing.T, p protocol) {
	srv := mcpguard.Server{Name: "sse", OperationBudget: 3 * time.Second, Retry: mcpguard.Retry{MaxAttempts: 1}}
	t.Run("day-long", func(t *testing.T) {
		reg := testRegistry(t)
		fs, g, done := httpSetupReg(t, reg, p.config(mcpfault.Config{StreamRetry: "86400000"}), srv)
		defer done()
		if err := g.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		tr := runTurn(t, t.Context(), reg, g, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "x"}})
		msg, _ := tr.fnResp["error"].(string)
		if !strings.Contains(msg, "asked to wait 24h0m0s") || !strings.Contains(msg, "budget 3s") || !strings.Contains(msg, "declined") {
			t.Errorf("response = %v, want the declined wait, naming the wait and the budget", tr.fnResp)
		}
		if tr.elapsed > time.Second {
			t.Errorf("the turn took %s: the wait was not declined at once", tr.elapsed)
		}
		if h := g.Health()[0]; h.Outcome != mcpguard.ClassFault || h.Limit != mcpguard.LimitNone {
			t.Errorf("health = %+v, want a fault (the server's hint), not a timeout", h)
		}
		br, _ := reg.Lookup("sse")
		// The declined retry: is the server's hint, handled like Retry-After:
		// one ordinary failure (the breaker opens for it only as the last of
		// RetryHintFailures in a row, or with trip_on_retry_hint: true)...
		if c, st := br.Counts(), br.Status(); st.State != registry.StateClosed || c.Failures != 1 || c.Trips != 0 {
			t.Errorf("%s, counts = %+v, cause %v: want the declined call counted once, as one ordinary failure", st.State, c, st.Cause)
		}
		// ...and its hint holds the breaker once it opens (capped by
		// MaxRetryHint).
		br.Trip(0, registry.CauseTrip)
		if ra := br.RetryAfter(); ra < 59*time.Minute {
			t.Errorf("hold after a trip = %s, want the server's hint capped at MaxRetryHint (1h)", ra)
		}
		if fs.Executions("echo") != 1 {
			t.Errorf("echo ran %d times, want 1", fs.Executions("echo"))
		}

		tools, _ := discover(t, t.Context(), g, "direct")
		br.Reset()
		_, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "x"})
		e := asError(t, err)
		if e.Reason != mcpguard.ReasonRetryDeclined || e.RetryAfterHint() != 24*time.Hour || e.BreakerOutcome() != registry.Failure ||
			e.Attempts != 1 || e.Class != mcpguard.ClassFault {
			t.Errorf("error = %+v, want retry_declined with the 24h hint, one attempt", e)
		}
	})
	for _, tc := range []struct {
		name, retry string
		min         time.Duration
	}{{"fits", "300", 300 * time.Millisecond}, {"zero", "0", time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			_, g, done := httpSetup(t, p.config(mcpfault.Config{StreamRetry: tc.retry}), srv)
			defer done()
			tools, err := discover(t, t.Context(), g, "inv")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := tools["echo"].Run(newToolCtx(t.Context()), map[string]any{"text": "hi"})
			if el := time.Since(start); err != nil || out[mcpguard.KeyOutput] != "hi" || el < tc.min {
				t.Errorf("retry: %s: out=%v err=%v after %s; want the answer on the resumed stream after at least %s", tc.retry, out, err, el, tc.min)
			}
		})
	}
}
