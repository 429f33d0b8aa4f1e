package registry_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// A registry shared by every caller of a dependency: keys come from
// configuration, each with its own policy or the default one.
func ExampleRegistry() {
	clk := registrytest.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.MustNew(
		registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true}),
		registry.WithPolicy("search", registry.Policy{ConsecutiveFailures: 2, OpenFor: 10 * time.Second, NoJitter: true}),
		registry.WithMaxBreakers(16),
	)

	search, _ := reg.Get("search")
	db, _ := reg.Get("db")
	for range 2 {
		tk, _ := search.Admit()
		tk.Done(registry.Failure)
	}
	tk, _ := db.Admit()
	tk.Done(registry.Success)

	clk.Advance(4 * time.Second)
	for _, s := range reg.Snapshot() {
		fmt.Printf("%s: %s (retry after %s, trips %d)\n", s.Key, s.State, s.RetryAfter, s.Counts.Trips)
	}
	fmt.Println("anything unavailable:", reg.AnyUnavailable())
	// Output:
	// db: closed (retry after 0s, trips 0)
	// search: open (retry after 6s, trips 1)
	// anything unavailable: true
}

// Admit before the call, report the outcome after it. A refused call is not
// made; the Decision says why and for how long.
func ExampleBreaker_Admit() {
	clk := registrytest.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.MustNew(
		registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 5 * time.Second, NoJitter: true}),
	)
	weather, _ := reg.Get("weather-api")

	call := func(o registry.Outcome) {
		tk, d := weather.Admit()
		if !d.Allowed {
			fmt.Printf("refused (%s), retry after %s\n", d.Reason, d.RetryAfter)
			return
		}
		// ... call the dependency; classify its result as o ...
		tk.Done(o)
		fmt.Printf("called in %s: %s → %s\n", d.State, o, weather.State())
	}

	call(registry.Failure) // trips
	call(registry.Success)
	clk.Advance(5 * time.Second)
	call(registry.Success) // the probe
	call(registry.Success)
	// Output:
	// called in closed: failure → open
	// refused (circuit_open), retry after 5s
	// called in half_open: success → closed
	// called in closed: success → closed
}

// A server's retry hint (Retry-After, RetryInfo) floors the open hold: the
// breaker stays open at least that long, and a later, shorter hint does not
// shorten it.
func ExampleBreaker_ObserveRetryAfter() {
	clk := registrytest.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.MustNew(
		registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 30 * time.Second, NoJitter: true}),
	)
	llm, _ := reg.Get("llm")

	// A 429 answer carrying "Retry-After: 120".
	tk, _ := llm.Admit()
	tk.DoneWithRetryAfter(registry.Failure, 2*time.Minute)
	fmt.Println(llm.State(), llm.RetryAfter())

	llm.ObserveRetryAfter(10 * time.Second) // shorter: ignored
	fmt.Println(llm.State(), llm.RetryAfter())

	clk.Advance(time.Minute)
	llm.ObserveRetryAfter(5 * time.Minute) // longer: extends the hold
	fmt.Println(llm.State(), llm.RetryAfter())
	// Output:
	// open 2m0s
	// open 2m0s
	// open 5m0s
}

// Subscribers receive transitions in order, on a goroutine of the
// registry's, outside every breaker lock. Flush waits for delivery.
func ExampleRegistry_Subscribe() {
	clk := registrytest.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.MustNew(
		registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 10 * time.Second, NoJitter: true, ProbeLease: 5 * time.Second}),
	)
	start := clk.Now()
	unsubscribe := reg.Subscribe(func(t registry.Transition) {
		fmt.Printf("#%d %s: %s → %s (%s) at +%s", t.Seq, t.Key, t.From, t.To, t.Cause, t.At.Sub(start))
		if t.To == registry.StateOpen && t.RetryAfter > 0 {
			fmt.Printf(", hold %s", t.RetryAfter)
		}
		fmt.Println()
	})
	defer unsubscribe()

	mcp, _ := reg.Get("mcp:files")
	tk, _ := mcp.Admit()
	tk.Done(registry.Failure) // trip
	clk.Advance(10 * time.Second)
	mcp.Admit()                  // a probe whose outcome never arrives
	clk.Advance(5 * time.Second) // its lease expires
	mcp.State()
	reg.Isolate("mcp:files")
	reg.Reset("mcp:files")

	if err := reg.Flush(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// #1 mcp:files: closed → open (trip) at +0s, hold 10s
	// #2 mcp:files: open → half_open (hold_expired) at +10s
	// #3 mcp:files: half_open → open (lease_expired) at +15s, hold 20s
	// #4 mcp:files: open → open (isolated) at +15s
	// #5 mcp:files: open → closed (reset) at +15s
}

// A layer that admits calls ahead of a dependency client (the plugin)
// registers an Admission; the client asks the registry before admitting a
// call itself, so that each call is admitted and counted once.
func ExampleRegistry_Admitted() {
	reg := registry.MustNew()
	pending := map[any]registry.Key{"call-1": "mcp:files"} // the layer's own table
	adm := registry.NewAdmission(func(call any, k registry.Key) bool { return pending[call] == k })
	reg.AddAdmission(adm) // held weakly: keep adm for as long as the layer lives

	fmt.Println(reg.Admitted("call-1", "mcp:files"), reg.Admitted("call-2", "mcp:files"))
	runtime.KeepAlive(adm)
	// Output: true false
}
