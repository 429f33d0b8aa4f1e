package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShortCircuitLineNeverHeldForever: a short-circuit line waits for the
// "breaker opened" line of its opening, but when the registry dropped
// transitions (its queue full behind a stuck subscriber) it is written at
// once: the opening it would wait for may never be delivered.
func TestShortCircuitLineNeverHeldForever(t *testing.T) {
	reg := registry.MustNew(registry.WithNotifyQueue(1))
	release := make(chan struct{})
	defer close(release)
	reg.Subscribe(func(registry.Transition) { <-release })
	var buf syncBuf
	l := slog.New(slog.NewTextHandler(&buf, nil))
	stop := telemetry.LogTransitions(reg, l)
	defer stop()
	obs := telemetry.NewLogObserver(l, reg)
	b, err := reg.Get("billing")
	if err != nil {
		t.Fatal(err)
	}
	ev := observe.ShortCircuitEvent{Dependency: "billing", Tool: "get_invoice", Reason: degrade.ReasonCircuitOpen, ThisTurn: 1, InvocationID: "inv"}

	b.Trip(time.Minute, registry.CauseRetryHint) // delivered to the stuck subscriber first
	obs.ShortCircuit(context.Background(), ev)
	if strings.Contains(buf.String(), telemetry.LogShortCircuit) {
		t.Fatalf("the short-circuit line was written before its opening's line:\n%s", buf.String())
	}
	for range 3 { // overflow the queue of one
		b.Reset()
		b.Trip(time.Minute, registry.CauseRetryHint)
	}
	if reg.DroppedTransitions() == 0 {
		t.Fatal("no transition dropped")
	}
	ev.InvocationID = "inv2"
	obs.ShortCircuit(context.Background(), ev)
	if n := strings.Count(buf.String(), telemetry.LogShortCircuit); n != 2 {
		t.Errorf("%d short-circuit lines after the drop, want both (held and new) at once:\n%s", n, buf.String())
	}
}
