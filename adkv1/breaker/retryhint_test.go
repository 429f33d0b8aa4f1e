package breaker_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
)

// hintEnv is the billing agent of newEnv on a loopback backend, with the
// registry's default policy for billing-api: what a tool gets unless it is
// configured.
func hintEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}), breaker.WithPolicy("billing-api", registry.Policy{}))
	e.backend.SetRetryAfter(40 * time.Second)
	return e
}

// invoiceTurn runs one turn and returns get_invoice's response.
func (e *env) invoiceTurn() map[string]any {
	e.t.Helper()
	rs := functionResponses(e.mustTurn("invoice 1"))
	if len(rs) != 1 {
		e.t.Fatalf("%d tool responses, want 1", len(rs))
	}
	return rs[0].Response
}

// TestToolOne429AmongSuccessesStaysClosed: through the real runner and
// plugin, a tool whose backend answers one call among successes with HTTP
// 429 Retry-After: 40 counts it as one ordinary failure: its breaker stays
// closed and the next turn's call reaches the backend and is answered.
// Repeated every fifth call (a fifth of the calls, never two in a row), the
// 429s still leave it closed: one rate-limited answer does not refuse the
// tool to every user for 40 s.
func TestToolOne429AmongSuccessesStaysClosed(t *testing.T) {
	e := hintEnv(t)
	calls := int64(0)
	for round := range 4 {
		for range 4 {
			e.backend.SetMode(fakebackend.Up)
			calls++
			if r := e.invoiceTurn(); r["status"] != "paid" || e.backend.Hits() != calls {
				t.Fatalf("round %d: response %v, backend hits %d; want call %d answered by the backend", round, r, e.backend.Hits(), calls)
			}
		}
		e.backend.SetMode(fakebackend.RateLimited)
		calls++
		if r := e.invoiceTurn(); r["error"] == nil || e.backend.Hits() != calls {
			t.Fatalf("round %d: response %v, backend hits %d; want the 429 from the backend", round, r, e.backend.Hits())
		}
		if st := e.breaker("billing-api").Status(); st.State != registry.StateClosed || st.Counts.Trips != 0 || st.Counts.ConsecutiveFailures != 1 {
			t.Fatalf("round %d: after one 429 with Retry-After 40 among successes: %s cause %v retry after %s, counts %+v; want closed, one ordinary failure",
				round, st.State, st.Cause, st.RetryAfter, st.Counts)
		}
		e.clk.Advance(time.Second)
	}
	e.backend.SetMode(fakebackend.Up)
	if r := e.invoiceTurn(); r["status"] != "paid" || e.backend.Hits() != calls+1 {
		t.Fatalf("the turn after the last 429: response %v, hits %d; want the call run", r, e.backend.Hits())
	}
	if c := e.breaker("billing-api").Counts(); c.Failures != 4 || c.Trips != 0 {
		t.Fatalf("counts %+v: want 4 failures, no trip", c)
	}
	e.assertNoPending()
}

// TestToolAnswering429OpensByThirdCall: a tool whose backend answers every
// call 429 Retry-After: 40 opens its breaker on the third call (the default
// RetryHintFailures; the default ConsecutiveFailures is 5), cause
// retry_hint, held for the hint rather than the 30 s OpenFor: no call
// reaches the backend until the 40 s have passed, and then one probe does.
func TestToolAnswering429OpensByThirdCall(t *testing.T) {
	e := hintEnv(t)
	e.backend.SetMode(fakebackend.RateLimited)
	for i := int64(1); i <= registry.DefaultRetryHintFailures; i++ {
		e.invoiceTurn()
		if st := e.breaker("billing-api").State(); e.backend.Hits() != i || (st == registry.StateOpen) != (i == registry.DefaultRetryHintFailures) {
			t.Fatalf("after call %d answered 429: %v, backend hits %d; want open on call %d only", i, st, e.backend.Hits(), registry.DefaultRetryHintFailures)
		}
	}
	b := e.breaker("billing-api")
	if st := b.Status(); st.Cause != registry.CauseRetryHint || st.RetryAfter != 40*time.Second || st.Counts.Trips != 1 {
		t.Fatalf("opened: cause %v, retry after %s, counts %+v; want retry_hint for the 40s hint", st.Cause, st.RetryAfter, st.Counts)
	}
	e.clk.Advance(39 * time.Second) // past OpenFor (30 s, jitter ≤ 3 s), within the hint
	if r := e.invoiceTurn(); r["reason"] != "circuit_open" || e.backend.Hits() != 3 {
		t.Fatalf("39s after the trip: response %v, backend hits %d; want the call refused without reaching the backend", r, e.backend.Hits())
	}
	e.clk.Advance(time.Second)
	e.backend.SetMode(fakebackend.Up)
	if r := e.invoiceTurn(); r["status"] != "paid" || e.backend.Hits() != 4 || b.State() != registry.StateClosed {
		t.Fatalf("once the hint has passed: response %v, hits %d, %v; want the probe answered and the breaker closed", r, e.backend.Hits(), b.State())
	}
	e.assertNoPending()
}
