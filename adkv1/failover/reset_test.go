package failover_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestResetIsImmediate: right after Registry.Reset(primary) — no Flush, no
// subscriber delivery — the next turn calls the primary again. The hold a
// server's retry hint set is the breaker's own, so Reset ends it at once.
func TestResetIsImmediate(t *testing.T) {
	e := newEnv(t, tripOnHint(testPolicy()))
	for i := range 50 {
		e.primary.script(step{err: apiErr(429, "RESOURCE_EXHAUSTED", retryInfo("60s"))})
		if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from fallback" {
			t.Fatalf("round %d: %q, want the fallback while the primary is rate limited", i, r.text())
		}
		if st := e.m.Status()[0]; st.HoldReason != failover.ReasonRateLimited || st.Hold != time.Minute {
			t.Fatalf("round %d: status %+v, want a 60s rate_limited hold", i, st)
		}
		e.reg.Reset(primaryKey)
		if st := e.m.Status()[0]; st.Hold != 0 || st.HoldReason != "" {
			t.Fatalf("round %d: hold after Reset = %s %q", i, st.Hold, st.HoldReason)
		}
		if down, _ := e.m.ModelUnavailable("chat"); down {
			t.Fatalf("round %d: unavailable right after Reset", i)
		}
		if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
			t.Fatalf("round %d: right after Reset: %q, want the primary", i, r.text())
		}
	}
}

// TestHintAfterResetIsDropped: a call admitted before Reset that answers 429
// with a retry hint after it must not open the fresh breaker.
func TestHintAfterResetIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, testPolicy())
		release := make(chan struct{})
		e.primary.script(step{block: release, err: apiErr(429, "RESOURCE_EXHAUSTED", retryInfo("60s"))})
		done := make(chan result)
		go func() { done <- run(t.Context(), e.m, userReq("hi"), false) }()
		synctest.Wait() // the primary call is in flight
		e.reg.Reset(primaryKey)
		close(release)
		if r := <-done; r.text() != "from fallback" {
			t.Fatalf("in-flight call: %q", r.text())
		}
		b, _ := e.reg.Lookup(primaryKey)
		if st := b.Status(); st.State != registry.StateClosed || st.RetryAfter != 0 {
			t.Fatalf("primary after a hint from before the Reset: %+v, want closed", st)
		}
		if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from primary" {
			t.Fatalf("next turn: %q, want the primary", r.text())
		}
	})
}

// TestIsolatedChainNamesNoRetryTime: with every endpoint isolated, nothing
// says "retry after" a time that would be false.
func TestIsolatedChainNamesNoRetryTime(t *testing.T) {
	e := newEnv(t, testPolicy(), failover.WithErrorWhenUnavailable())
	_ = e.reg.Isolate(primaryKey)
	_ = e.reg.Isolate(fallbackKey)
	if down, ra := e.m.ModelUnavailable("chat"); !down || ra != registry.UntilReset {
		t.Fatalf("ModelUnavailable = %v, %v; want unavailable until reset", down, ra)
	}
	r := run(t.Context(), e.m, userReq("hi"), false)
	var fe *failover.Error
	if !errors.As(r.err(), &fe) {
		t.Fatalf("err = %v", r.err())
	}
	if msg := fe.Error(); strings.Contains(msg, "retry after") || !strings.Contains(msg, "isolated") {
		t.Fatalf("Error() = %q", msg)
	}
	if h := fe.RetryAfterHint(); h != 0 {
		t.Fatalf("RetryAfterHint = %v, want none", h)
	}
}
