package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// clockedReplica is one replica whose registry runs on clk, sharing
// through the Redis at addr, ready.
func clockedReplica(t *testing.T, addr string, clk registry.Clock, pol registry.Policy) *replica {
	t.Helper()
	reg := registry.MustNew(registry.WithPolicy(dep, pol), registry.WithClock(clk))
	b, err := reg.Get(dep)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("t%d", time.Now().UnixNano())
	f, err := fleet.New(reg, fleet.WithAddress(addr), fleet.WithReplicaID("r0"), fleet.WithPrefix(prefix), fleet.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	r := &replica{name: "r0", prefix: prefix, reg: reg, b: b, f: f}
	waitHealthy(t, r)
	return r
}

// TestStaleOutcomesNeverTripAFreshClosedWindow: calls admitted while the
// breaker was closed, that report only after it tripped and closed again
// (a slow dependency: they time out late, after another replica's probe
// closed the fleet), belong to the earlier closed
// generation. The local breaker ignores them; the fleet window must too,
// or twelve stale failures trip a dependency that just recovered
// (fleet_rate) — and, published, every other replica's window as well.
func TestStaleOutcomesNeverTripAFreshClosedWindow(t *testing.T) {
	srv := redisServer(t)
	clk := registrytest.NewFakeClock(time.Unix(1_000_000, 0))
	pol := ratePolicy()
	pol.DisableSlowInFlight = true
	r := clockedReplica(t, srv.Addr(), clk, pol)
	reg, b, f, fleetPrefix := r.reg, r.b, r.f, r.prefix

	// Twelve calls admitted while closed stay outstanding.
	var late []registry.Ticket
	for range 12 {
		tk, d := b.Admit()
		if !d.Allowed {
			t.Fatalf("refused %+v", d)
		}
		late = append(late, tk)
	}
	// Twelve fast failures trip the breaker; its open is published.
	r.report(t, 12, registry.Failure)
	if st := b.State(); st != registry.StateOpen {
		t.Fatalf("%v after 12 failures", st)
	}
	waitUntil(t, 10*time.Second, "the open published", func() bool { return f.Stats().Published == 1 })
	// Another replica's probe succeeds: its close reaches this one.
	raw := rawClient(t, srv.Addr())
	prefix := fleetPrefix
	gen := genOf(t, raw, prefix)
	if err := raw.Publish(context.Background(), prefix+":events", fmtMsg("close", gen+1, 0, "r1")).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the fleet's close applied", func() bool { return b.State() == registry.StateClosed })
	if err := reg.Flush(context.Background()); err != nil { // the fleet saw the transition
		t.Fatal(err)
	}

	// The outstanding calls of the earlier closed generation time out now.
	for _, tk := range late {
		tk.Done(registry.Failure)
	}
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("the local breaker counted stale failures: %v", st)
	}
	// A fresh success marks the next share interval.
	r.report(t, 1, registry.Success)
	waitUntil(t, 10*time.Second, "the fresh success counted (or a trip)", func() bool {
		s, _ := f.WindowCounts(dep)
		return s == 1 || b.State() != registry.StateClosed
	})
	s, fl := f.WindowCounts(dep)
	if st, n := b.State(), f.Stats().FleetRateTrips; st != registry.StateClosed || n != 0 || fl != 0 {
		t.Fatalf("stale failures of the earlier closed generation counted: %v, %d fleet-rate trips, window %d/%d", st, n, s, fl)
	}
}

// TestOutcomeOriginLongerThanAReplicaID: no replica has an ID longer than
// 64 bytes (WithReplicaID), so an outcome message from such an origin is
// malformed — it was counted (and remembered, pinning its payload, once
// per distinct origin).
func TestOutcomeOriginLongerThanAReplicaID(t *testing.T) {
	srv := redisServer(t)
	r := newReplicas(t, srv.Addr(), 1, ratePolicy())[0]
	raw := rawClient(t, srv.Addr())
	send := func(msg string) {
		t.Helper()
		if err := raw.Publish(context.Background(), r.prefix+":events", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	send("2|" + strings.Repeat("o", 65) + "|1\n0 20 " + string(dep))
	send("2|" + strings.Repeat("o", 64) + "|1\n1 0 " + string(dep)) // the longest ID: counted, and a marker
	r.windowIs(t, 1, 0)
	if s := r.f.Stats(); s.OutcomesDropped["malformed"] != 1 || s.OutcomesReceived != 1 {
		t.Fatalf("dropped %v, received %d", s.OutcomesDropped, s.OutcomesReceived)
	}
}

// TestCountWindowKeepsOldOutcomes: a count window holds the newest
// count_window outcomes however old they are — the local breaker's ring
// does. 80 successes, then two minutes later 20 failures: one breaker with
// a count window of 100 sees 20% failures and stays closed. The fleet
// window forgot the successes after `window` (1m) and opened the breaker
// (fleet_rate) on 20 failures of 20, with no other replica at all.
func TestCountWindowKeepsOldOutcomes(t *testing.T) {
	srv := redisServer(t)
	clk := registrytest.NewFakeClock(time.Unix(1_000_000, 0))
	pol := registry.Policy{CountWindow: 100, MinCalls: 20, FailureRate: 0.5, Window: time.Minute,
		DisableConsecutiveFailures: true, DisableSlowInFlight: true, OpenFor: 10 * time.Second, NoJitter: true}
	r := clockedReplica(t, srv.Addr(), clk, pol)
	b, f := r.b, r.f
	r.report(t, 80, registry.Success)
	r.windowIs(t, 80, 0)
	clk.Advance(2 * time.Minute)
	r.report(t, 20, registry.Failure)
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("the local count window opened: %v", st)
	}
	waitUntil(t, 10*time.Second, "the failures counted (or a trip)", func() bool {
		_, fl := f.WindowCounts(dep)
		return fl == 20 || b.State() != registry.StateClosed
	})
	if s, fl := f.WindowCounts(dep); b.State() != registry.StateClosed || s != 80 || fl != 20 {
		t.Fatalf("%v, fleet window %d/%d, %d fleet-rate trips; want closed, 80/20", b.State(), s, fl, f.Stats().FleetRateTrips)
	}
}
