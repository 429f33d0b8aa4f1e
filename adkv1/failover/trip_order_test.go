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

// TestHintedFailureThatTripsKeepsTheHint: a hinted failure that also
// crosses the failure threshold opens the endpoint for the hint, not the
// policy's hold: under trip_on_retry_hint a 429 does so with the hint's
// cause; under the default (a hint is a floor) a 503 with a RetryInfo that
// trips the threshold is held for its hint.
func TestHintedFailureThatTripsKeepsTheHint(t *testing.T) {
	retryInfo := []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}}
	on := true
	for _, tc := range []struct {
		name  string
		trip  *bool
		err   genai.APIError
		cause registry.Cause
	}{
		{"trip_on_retry_hint", &on, genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: retryInfo}, registry.CauseRetryHint},
		{"default", nil, genai.APIError{Code: 503, Status: "UNAVAILABLE", Details: retryInfo}, registry.CauseTrip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hintedFailureThatTrips(t, tc.trip, tc.err, tc.cause)
		})
	}
}

func hintedFailureThatTrips(t *testing.T, trip *bool, limited genai.APIError, cause registry.Cause) {
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: 5 * time.Second, NoJitter: true, TripOnRetryHint: trip,
	}))
	var mu sync.Mutex
	var got []registry.Transition
	reg.Subscribe(func(tr registry.Transition) { mu.Lock(); got = append(got, tr); mu.Unlock() })
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
	if len(got) != 1 || got[0].Cause != cause || got[0].To != registry.StateOpen {
		t.Fatalf("transitions = %+v, want one open with cause %v", got, cause)
	}
	if c := b.Counts(); c.Trips != 1 {
		t.Fatalf("counts = %+v", c)
	}
}
