package failover_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestHintedFailureThatTripsKeepsTheHint: a 429 with a retry hint that also
// crosses the failure threshold opens the endpoint with the hint's hold and
// cause, not the policy's.
func TestHintedFailureThatTripsKeepsTheHint(t *testing.T) {
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: 5 * time.Second, NoJitter: true,
	}))
	var mu sync.Mutex
	var got []registry.Transition
	reg.Subscribe(func(tr registry.Transition) { mu.Lock(); got = append(got, tr); mu.Unlock() })
	limited := genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"},
	}}
	m := failover.MustNew("chat", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "primary", err: limited}, Key: "model:primary"},
		{LLM: &endpointLLM{name: "fallback"}, Key: "model:fallback"},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	defer m.Close()
	for _, err := range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := reg.Lookup("model:primary")
	if ra := b.RetryAfter(); ra < 29*time.Second {
		t.Fatalf("primary retry after %v, want the 30s hint, not the 5s policy hold", ra)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Cause != registry.CauseRetryHint || got[0].To != registry.StateOpen {
		t.Fatalf("transitions = %+v, want one open with cause retry_hint", got)
	}
	if c := b.Counts(); c.Trips != 1 {
		t.Fatalf("counts = %+v", c)
	}
}
