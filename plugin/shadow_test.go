package plugin_test

import (
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	breaker "github.com/adkbreaker/adkbreaker/plugin"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestShadowModeAdmitsEveryCallAndCountsExactly: on the real runner, a
// shadow-mode breaker trips as usual, but every later call still reaches the
// backend and the model never sees a payload; each would-be refusal is
// counted once, as a short-circuit with mode=shadow.
func TestShadowModeAdmitsEveryCallAndCountsExactly(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true}),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	e.backend.SetMode(fakebackend.Down)
	for i := range 8 {
		evs := e.mustTurn("invoice 42?")
		for _, ev := range evs {
			if ev.Content == nil {
				continue
			}
			for _, p := range ev.Content.Parts {
				if fr := p.FunctionResponse; fr != nil {
					if _, ok := degrade.Parse(fr.Response); ok {
						t.Fatalf("turn %d: the model got an unavailable payload from a shadow breaker", i)
					}
				}
			}
		}
	}
	if hits := e.backend.Hits(); hits != 8 {
		t.Errorf("backend hits = %d, want all 8 calls", hits)
	}
	b, _ := e.reg.Lookup("billing-api")
	if c := b.Counts(); c.ShadowRefusals != 5 || c.ShortCircuits != 0 || b.State() != registry.StateOpen {
		t.Errorf("counts = %+v state %v, want 5 shadow refusals (3 failures tripped it), none enforced", c, b.State())
	}
	flush(t, e.reg)
	m := metrics(t, reader)["adkbreaker.short_circuits"]
	if got := m["dependency=billing-api,mode=shadow,reason=circuit_open,terminal=false,tool=get_invoice"]; got != 5 || len(m) != 1 {
		t.Errorf("short_circuits = %v, want 5 with mode=shadow only", m)
	}
	if tix, invs := e.h.Pending(); tix != 0 || invs != 0 {
		t.Errorf("pending = %d/%d after the turns", tix, invs)
	}
}
