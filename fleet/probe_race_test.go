package fleet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// stallScript keeps Redis busy for ARGV[1] microseconds: every command
// queued behind it, the lease writes among them, waits.
const stallScript = `
local t0 = redis.call('TIME')
local start = tonumber(t0[1]) * 1000000 + tonumber(t0[2])
while true do
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000000 + tonumber(t[2]) - start > tonumber(ARGV[1]) then break end
end
return 1
`

// TestSlowLeaseWriteKeepsOneProbe: Redis stalls for a few command timeouts
// just as a shared hold ends, so the replicas' lease writes time out. Each
// replica's breaker around Redis opens, and a replica that sees Redis
// unavailable probes on its own. Before, all three did so at once, the
// moment the shared hold ended: three probes in one hold. Now a replica
// probes on its own only once Redis has been unavailable for longer than
// any lease another replica may hold (the probe's timeout): a blip of
// Redis costs at most that much of recovery, never a probe per replica.
func TestSlowLeaseWriteKeepsOneProbe(t *testing.T) {
	srv := redisServer(t)
	const hold = 300 * time.Millisecond
	pol := testPolicy(hold)
	pol.CallTimeout = 2 * time.Second // the probe's call timeout: the lease
	rs := newReplicas(t, srv.Addr(), 3, pol, fleet.WithTimeouts(500*time.Millisecond, 50*time.Millisecond))
	raw := rawClient(t, srv.Addr())
	rs[0].fail(t)
	for _, r := range rs[1:] {
		r.await(t, 5*time.Second, "fleet_open", isCause(registry.CauseFleetOpen))
	}
	tripped := time.Now()
	// Stall Redis from just before the hold ends for 400ms (eight command
	// timeouts).
	time.Sleep(time.Until(tripped.Add(hold - 50*time.Millisecond))) // the hold is the replicas' own clock
	stalled := make(chan error, 1)
	go func() {
		stalled <- raw.Eval(context.Background(), stallScript, nil, 400_000).Err()
	}()
	var mu sync.Mutex
	var probes []string
	var out []registry.Ticket
	var wg sync.WaitGroup
	stop := time.Now().Add(1900 * time.Millisecond) // within the probe's 2s call timeout: one hold
	for _, r := range rs {
		wg.Go(func() {
			for time.Now().Before(stop) {
				tk, d := r.b.Admit()
				if d.Allowed {
					// The probe hangs (a slow dependency): it is still out
					// when the stall ends, and reported after the hold.
					mu.Lock()
					if tk.Probe() {
						probes = append(probes, r.name)
					}
					out = append(out, tk)
					mu.Unlock()
					return
				}
				time.Sleep(time.Millisecond) // traffic
			}
		})
	}
	wg.Wait()
	for _, tk := range out {
		tk.Done(registry.Failure)
	}
	if err := <-stalled; err != nil {
		t.Fatalf("stall script: %v", err)
	}
	t.Logf("probes within the hold: %v", probes)
	if len(probes) > 1 {
		t.Fatalf("%d probes across the fleet in one hold (%v)", len(probes), probes)
	}
	if len(probes) == 0 {
		t.Fatal("no probe within 1.9s: the fleet did not recover from the stall")
	}
}
