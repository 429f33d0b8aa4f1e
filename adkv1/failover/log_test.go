package failover_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

func TestLogTransitions(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1e9, 0))
	pol := registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: time.Second, NoJitter: true}
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(pol))
	var logs logBuf
	stop := failover.LogTransitions(reg, logs.logger(), "a")
	defer stop()
	a, _ := reg.Get("a")
	b, _ := reg.Get("b")
	fail := func(br *registry.Breaker) {
		if tk, d := br.Admit(); d.Allowed {
			tk.Done(registry.Failure)
		}
	}
	fail(b) // not watched
	for range 3 {
		fail(a) // trip, or a failed probe
		clk.Advance(2 * time.Second)
	}
	if err := reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, "key=b") {
		t.Errorf("unwatched key logged:\n%s", out)
	}
	// closed→open, open→half_open, half_open→open ×2 …: one line per
	// (key, to-state) per 10s.
	if n := strings.Count(out, "to=open"); n != 1 {
		t.Errorf("%d open lines, want 1 (rate-limited):\n%s", n, out)
	}
	for _, want := range []string{"level=WARN msg=\"adkbreaker: breaker state change\" key=a from=closed to=open cause=trip retry_after=1s", "level=INFO", "to=half_open"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	clk.Advance(10 * time.Second)
	fail(a)
	_ = reg.Flush(t.Context())
	if !strings.Contains(logs.String(), "suppressed=") {
		t.Errorf("no suppressed count:\n%s", logs.String())
	}
}
