package failover_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// TestShadowEndpointsAreNeverUnavailable: endpoints whose breakers are in
// shadow mode trip as usual, but the model guard never reports the model
// unavailable (the plugin would end the turn instead of calling the model),
// and the endpoints are still called.
func TestShadowEndpointsAreNeverUnavailable(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 30 * time.Second, NoJitter: true, Shadow: true}))
	down := errors.New("connection refused")
	primary, fallback := &countingLLM{err: down}, &countingLLM{err: down}
	m := failover.MustNew("assistant", reg, []failover.Endpoint{
		{LLM: primary, Key: "model:primary"},
		{LLM: fallback, Key: "model:fallback"},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	defer m.Close()
	for range 3 {
		for range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
		}
	}
	for _, k := range []registry.Key{"model:primary", "model:fallback"} {
		if b, ok := reg.Lookup(k); !ok || b.State() != registry.StateOpen {
			t.Fatalf("%s did not trip", k)
		}
	}
	if down, ra := m.ModelUnavailable("assistant"); down {
		t.Errorf("ModelUnavailable = true, %s with shadow-mode breakers: the plugin would end the turn", ra)
	}
	if primary.calls != 3 {
		t.Errorf("primary called %d times, want all 3 (shadow mode refuses nothing)", primary.calls)
	}
}

type countingLLM struct {
	err   error
	calls int
}

func (c *countingLLM) Name() string { return "counting" }

func (c *countingLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	c.calls++
	return func(yield func(*model.LLMResponse, error) bool) { yield(nil, c.err) }
}
