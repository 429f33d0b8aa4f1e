package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// ratePolicy trips on the failure rate alone: 50% of at least 12 calls in
// a minute (no consecutive-failure gate).
func ratePolicy() registry.Policy {
	return registry.Policy{FailureRate: 0.5, MinCalls: 12, Window: time.Minute, DisableConsecutiveFailures: true,
		OpenFor: 10 * time.Second, OpenBackoff: 1, NoJitter: true, ProbeLease: 5 * time.Second}
}

// report admits n calls on r and reports each with o; none may trip r.
func (r *replica) report(t *testing.T, n int, o registry.Outcome) {
	t.Helper()
	for range n {
		tk, d := r.b.Admit()
		if !d.Allowed {
			t.Fatalf("%s: refused %+v", r.name, d)
		}
		tk.Done(o)
	}
}

// windowIs waits until r's fleet window holds s successes and f failures.
func (r *replica) windowIs(t *testing.T, s, f uint64) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("%s's window at %d/%d", r.name, s, f), func() bool {
		gs, gf := r.f.WindowCounts(dep)
		return gs == s && gf == f
	})
}

// TestFleetRateTripsWhereNoReplicaWould: 4 failures on each of 3 replicas.
// Alone none reaches the 12-call volume gate; together they do: the replica
// whose failures complete the fleet's window opens (fleet_rate) and the
// others adopt its trip (fleet_open), within a bound.
func TestFleetRateTripsWhereNoReplicaWould(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 3, ratePolicy())
	rs[0].report(t, 4, registry.Failure)
	rs[1].report(t, 4, registry.Failure)
	for _, r := range rs {
		r.windowIs(t, 0, 8) // everyone has counted both
	}
	for _, r := range rs {
		if st := r.b.State(); st != registry.StateClosed {
			t.Fatalf("%s: %v after 8 failures over the fleet", r.name, st)
		}
	}
	start := time.Now()
	rs[2].report(t, 4, registry.Failure)
	if st := rs[2].b.State(); st != registry.StateClosed {
		t.Fatalf("r2's own 4 failures opened it (%v): not a fleet trip", st)
	}
	tr := rs[2].await(t, 5*time.Second, "fleet_rate", func(tr registry.Transition) bool { return tr.To == registry.StateOpen })
	if tr.Cause != registry.CauseFleetRate || tr.RetryAfter != 10*time.Second {
		t.Fatalf("r2 opened with %v for %v, want fleet_rate for the policy's 10s", tr.Cause, tr.RetryAfter)
	}
	for _, r := range rs[:2] {
		tr := r.await(t, 5*time.Second, "fleet_open", func(tr registry.Transition) bool { return tr.To == registry.StateOpen })
		if tr.Cause != registry.CauseFleetOpen {
			t.Fatalf("%s opened with %v, want fleet_open", r.name, tr.Cause)
		}
	}
	took := time.Since(start)
	t.Logf("all three open %v after the last failure (share interval %v)", took, fleet.DefaultShareInterval)
	if took > 2*time.Second {
		t.Errorf("the fleet took %v to open", took)
	}
	for i, r := range rs {
		want := uint64(0)
		if i == 2 {
			want = 1
		}
		if n := r.f.Stats().FleetRateTrips; n != want {
			t.Errorf("%s: %d fleet-rate trips, want %d", r.name, n, want)
		}
		r.windowIs(t, 0, 0) // cleared by the transition
	}
}

// TestFleetSuccessesPreventRateTrip is the converse: the same 12 failures
// over the fleet, after 13 successes the fleet has counted, stay below the
// 50% gate (12/25) — failures from other replicas never trip a replica
// whose fleet window says the dependency mostly works. One failure more
// reaches the gate (13/26).
func TestFleetSuccessesPreventRateTrip(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 3, ratePolicy())
	rs[2].report(t, 13, registry.Success)
	for _, r := range rs {
		r.windowIs(t, 13, 0)
	}
	for _, r := range rs {
		r.report(t, 4, registry.Failure)
	}
	for _, r := range rs {
		r.windowIs(t, 13, 12)
	}
	for _, r := range rs {
		if st, s := r.b.State(), r.f.Stats(); st != registry.StateClosed || s.FleetRateTrips != 0 {
			t.Fatalf("%s: %v, %d fleet-rate trips at 12 failures of 25", r.name, st, s.FleetRateTrips)
		}
	}
	rs[0].report(t, 1, registry.Failure)
	tr := rs[0].await(t, 5*time.Second, "fleet_rate", func(tr registry.Transition) bool { return tr.To == registry.StateOpen })
	if tr.Cause != registry.CauseFleetRate {
		t.Fatalf("r0 opened with %v", tr.Cause)
	}
}

// TestOutcomeMessagesNeverCountTwice: forged, replayed, older, malformed
// and self-addressed outcome messages, and a replica's own echoes, are
// dropped; a message never creates a breaker. Any of them counted would
// have opened the breaker (12 calls at ≥ 50%).
func TestOutcomeMessagesNeverCountTwice(t *testing.T) {
	srv := redisServer(t)
	r := newReplicas(t, srv.Addr(), 1, ratePolicy())[0]
	raw := rawClient(t, srv.Addr())
	ctx := context.Background()
	send := func(msg string) {
		t.Helper()
		if err := raw.Publish(ctx, r.prefix+":events", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Its own outcomes come back on the channel: counted once.
	r.report(t, 3, registry.Failure)
	waitUntil(t, 10*time.Second, "own echo", func() bool { return r.f.Stats().OutcomesDropped["own"] >= 1 })
	r.windowIs(t, 0, 3)

	d := string(dep)
	send("2|x|100\n0 5 " + d) // counted: 8 failures
	send("2|x|100\n0 5 " + d) // duplicate
	send("2|x|99\n0 5 " + d)  // stale
	send("2|" + r.name + "|900000000000000000\n0 20 " + d)
	for _, bad := range []string{
		"2|x|101", "2|x|101\n", "2|x|101\n0 5", "2|x|101\n0 0 " + d, "2|x|101\n-1 5 " + d, "2|x|101\nx 5 " + d,
		"2|x|0\n0 5 " + d, "2||101\n0 5 " + d, "2|x y|101\n0 5 " + d, "2|x|101|7\n0 5 " + d,
		"2|x|101\n0 5 " + d + "\n0 5 " + d, "2|x|101\n0 4294967296 " + d, "2|x|101\n0 5 \x01" + d,
	} {
		send(bad)
	}
	send("2|x|102\n0 50 never-called") // no breaker here: not created
	send("2|y|1\n1 0 " + d)            // marker: the channel keeps order
	r.windowIs(t, 1, 8)
	if _, ok := r.reg.Lookup("never-called"); ok {
		t.Fatal("an outcome message created a breaker")
	}
	s := r.f.Stats()
	if st := r.b.State(); st != registry.StateClosed || s.FleetRateTrips != 0 {
		t.Fatalf("%v, %d fleet-rate trips", st, s.FleetRateTrips)
	}
	want := map[string]uint64{"duplicate": 1, "stale": 1, "malformed": 13, "unknown_dependency": 1}
	for reason, n := range want {
		if s.OutcomesDropped[reason] != n {
			t.Errorf("dropped %s = %d, want %d (%v)", reason, s.OutcomesDropped[reason], n, s.OutcomesDropped)
		}
	}
	if s.OutcomesDropped["own"] < 2 || s.OutcomesReceived != 3 {
		t.Errorf("own %d, received %d: %+v", s.OutcomesDropped["own"], s.OutcomesReceived, s)
	}
}

// TestOutcomeMessagesPerIntervalNotPerCall: outcome sharing costs one
// message per share interval whatever the traffic: 10,000 calls publish at
// most one message per elapsed interval (plus one), from the fleet's own
// goroutine.
func TestOutcomeMessagesPerIntervalNotPerCall(t *testing.T) {
	srv := redisServer(t)
	r := newReplicas(t, srv.Addr(), 1, ratePolicy())[0]
	start := time.Now()
	r.report(t, 10_000, registry.Success)
	r.windowIs(t, 10_000, 0)
	// The window counts a delta before its message is published (a Redis
	// round trip later): wait for the count too.
	waitUntil(t, 10*time.Second, "an outcome message published", func() bool { return r.f.Stats().OutcomesPublished > 0 })
	elapsed := time.Since(start)
	n := r.f.Stats().OutcomesPublished
	t.Logf("10,000 calls in %v: %d outcome messages", elapsed, n)
	if limit := uint64(elapsed/fleet.DefaultShareInterval) + 1; n == 0 || n > limit {
		t.Fatalf("%d outcome messages in %v, want 1..%d", n, elapsed, limit)
	}
}

// TestOutcomeSharingOff: WithoutOutcomeSharing (or a share interval of 0)
// keeps each replica's window its own, as before outcome sharing.
func TestOutcomeSharingOff(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 2, ratePolicy(), fleet.WithShareInterval(0))
	rs[0].report(t, 11, registry.Failure)
	rs[1].report(t, 11, registry.Failure)
	// A decision still travels: the marker shows the channel was read.
	rs[0].b.Trip(time.Minute, registry.CauseRetryHint)
	tr := rs[1].await(t, 5*time.Second, "fleet_open", func(tr registry.Transition) bool { return tr.To == registry.StateOpen })
	if tr.Cause != registry.CauseFleetOpen {
		t.Fatalf("r1 opened with %v", tr.Cause)
	}
	for _, r := range rs {
		s := r.f.Stats()
		if sc, fc := r.f.WindowCounts(dep); s.OutcomesPublished != 0 || s.OutcomesReceived != 0 || s.FleetRateTrips != 0 || sc+fc != 0 {
			t.Fatalf("%s shared outcomes with sharing off: %+v", r.name, s)
		}
	}
}
