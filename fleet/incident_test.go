package fleet_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// scale shrinks the reference incident (docs/incident.md) in time by 100: a 30 s cool-down is
// 300 ms, a 5 s tool timeout 50 ms, one call every 2 s (20 calls fill the
// window in 40 s, as in the incident) is one every 20 ms.
const scale = 100

// incidentPolicy is the reference incident's breaker: 50% failures over a 20-call window,
// 30 s cool-down restarting after each failed probe, 5 s tool timeout.
func incidentPolicy() registry.Policy {
	return registry.Policy{
		FailureRate: 0.5, MinCalls: 20, Window: time.Hour / scale, ConsecutiveFailures: 1 << 20,
		OpenFor: 30 * time.Second / scale, OpenBackoff: 1, NoJitter: true,
		ProbeLease: 5 * time.Second / scale,
	}
}

// incident replays the outage against breakers that share one flaky
// backend: the backend is down for 18 cool-downs (the seed's nine minutes
// of probes every 30 s), then recovers. Traffic is one call every interval,
// spread round-robin over the breakers. It returns the calls that reached
// the backend while it was down before any breaker had opened (pre-trip)
// and after one had (dead), and the probes among the latter; together they
// are every call the dead dependency received (the seed's "eighteen calls
// to a fragile service" are its probes).
func incident(t *testing.T, bs []*registry.Breaker) (preTrip, dead, probes int) {
	const interval = 2 * time.Second / scale
	outage := 18 * 30 * time.Second / scale
	var tripped atomic.Bool
	start := time.Now()
	for i := 0; time.Since(start) < outage+40*time.Second/scale; i++ {
		b := bs[i%len(bs)]
		tk, d := b.Admit()
		if !tripped.Load() {
			for _, o := range bs {
				if o.State() != registry.StateClosed {
					tripped.Store(true)
				}
			}
		}
		if d.Allowed {
			if time.Since(start) < outage {
				if tripped.Load() {
					dead++
				} else {
					preTrip++
				}
				if tk.Probe() {
					probes++
				}
				tk.Done(registry.Failure)
			} else {
				tk.Done(registry.Success)
			}
		}
		time.Sleep(interval) // the traffic's pace
	}
	for _, b := range bs {
		if b.State() != registry.StateClosed {
			t.Errorf("%s still %v after the backend recovered", b.Key(), b.State())
		}
	}
	return preTrip, dead, probes
}

// TestIncidentFleetVersusSingleReplica: the reference incident with the same
// traffic served by one replica, by three replicas sharing through Redis,
// and by three replicas breaking alone. Counting every call that reached
// the dead dependency (the calls that fill the first window, then probes
// and calls racing a trip), the shared fleet sends at most 1.5× what a
// single replica does: the replicas share their outcome counts, so the
// fleet's window fills as fast as one replica's (the first trip is a
// fleet_rate trip), and one probe per cool-down serves the whole fleet.
// Three lone replicas send about 3× (each fills its own window, each probes
// on its own).
func TestIncidentFleetVersusSingleReplica(t *testing.T) {
	srv := redisServer(t)
	pol := incidentPolicy()
	type result struct{ pre, dead, probes int }
	var single, shared, alone result
	var wg sync.WaitGroup
	run := func(res *result, bs []*registry.Breaker) {
		defer wg.Done()
		res.pre, res.dead, res.probes = incident(t, bs)
	}
	one := registry.MustNew(registry.WithPolicy(dep, pol))
	ob, _ := one.Get(dep)
	rs := newReplicas(t, srv.Addr(), 3, pol) // default share interval: 50 ms, 2.5 calls of the traffic
	var fleetBs []*registry.Breaker
	for _, r := range rs {
		fleetBs = append(fleetBs, r.b)
	}
	var lone []*registry.Breaker
	for range 3 {
		b, _ := registry.MustNew(registry.WithPolicy(dep, pol)).Get(dep)
		lone = append(lone, b)
	}
	wg.Add(3)
	go run(&single, []*registry.Breaker{ob})
	go run(&shared, fleetBs)
	go run(&alone, lone)
	wg.Wait()
	total := func(r result) int { return r.pre + r.dead }
	t.Logf("single replica:        %3d calls to the dead dependency = pre-trip %2d + after %2d (probes %2d)", total(single), single.pre, single.dead, single.probes)
	t.Logf("3 replicas, shared:    %3d calls to the dead dependency = pre-trip %2d + after %2d (probes %2d)", total(shared), shared.pre, shared.dead, shared.probes)
	t.Logf("3 replicas, alone:     %3d calls to the dead dependency = pre-trip %2d + after %2d (probes %2d)", total(alone), alone.pre, alone.dead, alone.probes)
	rateTrips := uint64(0)
	for _, r := range rs {
		s := r.f.Stats()
		rateTrips += s.FleetRateTrips
		t.Logf("%s: %+v", r.name, s)
	}
	if single.dead == 0 {
		t.Fatal("the single replica never probed")
	}
	if float64(total(shared)) > 1.5*float64(total(single)) {
		t.Errorf("fleet: %d calls to the dead dependency > 1.5 × the single replica's %d", total(shared), total(single))
	}
	if rateTrips == 0 {
		t.Error("no replica opened on the fleet's failure rate")
	}
	if float64(total(alone)) < 2*float64(total(single)) {
		t.Errorf("replicas breaking alone: %d calls to the dead dependency, expected about 3× the single replica's %d", total(alone), total(single))
	}
}
