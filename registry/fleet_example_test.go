package registry_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// onlyWhenLeased is a ProbeGate that lets a replica probe only while it
// holds a (here: pretend) fleet-wide lease.
type onlyWhenLeased struct{ leased bool }

func (g *onlyWhenLeased) AllowProbe(registry.Key) (bool, time.Duration) {
	return g.leased, 100 * time.Millisecond
}

// A fleet layer (package fleet) adopts other replicas' decisions and gates
// half-open probes; the closed path never sees it.
func ExampleRegistry_SetProbeGate() {
	clk := registrytest.NewFakeClock(time.Unix(0, 0))
	r := registry.MustNew(registry.WithClock(clk), registry.WithDefaultPolicy(registry.Policy{NoJitter: true}))
	r.Subscribe(func(t registry.Transition) { fmt.Println(t.From, "→", t.To, t.Cause) })
	gate := &onlyWhenLeased{}
	r.SetProbeGate(gate)
	b, _ := r.Get("billing-api")

	b.AdoptOpen(10 * time.Second) // another replica tripped; 10s of its hold remain
	_ = r.Flush(context.Background())
	clk.Advance(10 * time.Second)
	_, d := b.Admit()
	_ = r.Flush(context.Background())
	fmt.Println("hold over, no lease:", d.Reason)
	gate.leased = true
	tk, d := b.Admit()
	fmt.Println("lease held:", d.Allowed, "probe:", tk.Probe())
	b.AdoptClose() // meanwhile another replica's probe succeeded: close with it
	_ = r.Flush(context.Background())
	// Output:
	// closed → open fleet_open
	// open → half_open hold_expired
	// hold over, no lease: half_open_busy
	// lease held: true probe: true
	// half_open → closed fleet_close
}

// The fleet layer counts the outcomes of every replica; when together they
// meet the policy's failure rate while this replica's breaker is still
// closed (here 3 calls of its own, below min_calls), it opens it for the
// policy's hold.
func ExampleBreaker_TripFleet() {
	r := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{MinCalls: 20, OpenFor: 30 * time.Second, NoJitter: true}))
	var seen []string // transitions are delivered on their own goroutine
	r.Subscribe(func(t registry.Transition) {
		seen = append(seen, fmt.Sprint(t.From, " → ", t.To, " ", t.Cause, " ", t.RetryAfter))
	})
	b, _ := r.Get("billing-api")
	for range 3 {
		tk, _ := b.Admit()
		tk.Done(registry.Failure)
	}
	fmt.Println("opened:", b.TripFleet())
	fmt.Println("again:", b.TripFleet()) // open already: left alone
	_ = r.Flush(context.Background())    // every transition so far delivered
	fmt.Println(strings.Join(seen, "\n"))
	// Output:
	// opened: true
	// again: false
	// closed → open fleet_rate 30s
}

// A call admitted while the breaker was closed and reported after it
// tripped belongs to the earlier closed window: Reported counts it, Fresh
// (what a fleet layer shares) does not.
func ExampleBreaker_Fresh() {
	r := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true}))
	b, _ := r.Get("billing-api")
	slow, _ := b.Admit() // still outstanding when the breaker trips
	fast, _ := b.Admit()
	fast.Done(registry.Failure) // trips the breaker
	slow.Done(registry.Failure)
	fmt.Println("reported:", b.Reported()[registry.Failure], "fresh:", b.Fresh()[registry.Failure])
	// Output: reported: 2 fresh: 1
}
