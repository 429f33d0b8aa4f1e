package registry_test

import (
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// A dependency that stops answering: with in-flight slowness, the breaker
// opens when three calls have been outstanding for a second — before any of
// them returns — and their late outcomes do not count twice.
func ExampleBreaker_ContainCounts_slowInFlight() {
	clk := registrytest.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{
		SlowInFlight: time.Second, SlowInFlightCalls: 3, CallTimeout: 5 * time.Second, NoJitter: true,
	}))
	b, _ := reg.Get("enrichment")
	var hung []registry.Reservation
	for {
		r, d := b.Reserve() // one call every 100ms; none returns
		if !d.Allowed {
			fmt.Printf("refused after %d calls: %s, %s\n", len(hung), d.Reason, d.State)
			break
		}
		hung = append(hung, r)
		clk.Advance(100 * time.Millisecond)
	}
	for _, r := range hung {
		r.Report(registry.Failure, 0) // at their timeout
	}
	cc := b.ContainCounts()
	fmt.Println("judged slow:", cc.SlowVerdicts, "late outcomes excluded:", cc.LateOutcomes, "trips:", b.Counts().Trips)
	// Output:
	// refused after 12 calls: circuit_open, open
	// judged slow: 3 late outcomes excluded: 3 trips: 1
}

// A bulkhead: the 21st concurrent call is refused as saturated, and the
// breaker stays closed.
func ExampleBreaker_ContainCounts_bulkhead() {
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{MaxConcurrent: 20}))
	b, _ := reg.Get("enrichment")
	var in []registry.Reservation
	for range 20 {
		r, _ := b.Reserve()
		in = append(in, r)
	}
	_, d := b.Reserve()
	fmt.Println(d.Reason, d.State, d.RetryAfter)
	for _, r := range in {
		r.Report(registry.Success, 0)
	}
	cc := b.ContainCounts()
	fmt.Println("saturated:", cc.Saturated, "peak:", cc.PeakInFlight, "state:", b.State())
	// Output:
	// saturated closed 1s
	// saturated: 1 peak: 20 state: closed
}

// A client that ends every call within its own budget (mcpguard's
// OperationBudget) tells the breaker: a half-open probe still out at the
// budget has failed, and a call refused meanwhile is told to retry within
// it rather than within the 60s probe lease.
func ExampleBreaker_SetCallBudget() {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{NoJitter: true, DisableSlowInFlight: true}))
	b, _ := r.Get("mcp:files")
	b.SetCallBudget(45 * time.Second)
	b.Trip(time.Second, registry.CauseRetryHint)
	clk.Advance(time.Second)
	probe, _ := b.Admit()
	_, d := b.Admit()
	fmt.Println("probe:", probe.Probe(), "others told:", d.Reason, d.RetryAfter)
	// Output: probe: true others told: half_open_busy 45s
}
