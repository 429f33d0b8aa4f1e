package breaker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestOpenedLineBeforeTheShortCircuitsItCauses: on the real runner, the
// "breaker opened" line of each opening comes before the short-circuit
// lines of the refusals it causes, even when the registry delivers the
// transition late (here a slow subscriber registered first holds delivery
// back until the outage is over, as a loaded machine does for a moment).
func TestOpenedLineBeforeTheShortCircuitsItCauses(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := registry.MustNew(registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}))
	release := make(chan struct{})
	released := false
	free := func() {
		if !released {
			released = true
			close(release)
		}
	}
	t.Cleanup(free)
	reg.Subscribe(func(registry.Transition) { <-release })
	var logs logCapture
	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithLogger(logs.logger()),
		breaker.WithDependency("billing-api", "get_invoice", "list_invoices"))
	if err != nil {
		t.Fatal(err)
	}
	backend := fakebackend.New()
	t.Cleanup(backend.Close)
	runOutage(t, backend, clk.Advance, p)
	free()
	flush(t, reg)

	const opened, sc = "adkbreaker: breaker opened", "adkbreaker: call short-circuited"
	var order []string
	logs.mu.Lock()
	for _, l := range strings.Split(strings.TrimSpace(logs.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad log line %q: %v", l, err)
		}
		if msg, _ := m["msg"].(string); msg == opened || msg == sc {
			order = append(order, msg)
		}
	}
	logs.mu.Unlock()
	// Two openings (the threshold trip, the failed probe), each followed
	// by the first refusal of each run it cut: turns 2–4, then 5–6.
	var got []string
	for _, m := range order {
		if m == opened {
			got = append(got, "opened")
		} else {
			got = append(got, "short-circuited")
		}
	}
	want := "opened short-circuited short-circuited short-circuited opened short-circuited short-circuited"
	if strings.Join(got, " ") != want {
		t.Errorf("log order = %v, want %s", got, want)
	}
}
