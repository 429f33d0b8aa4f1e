package fleet_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestOperatorActionsTravel: an operator who isolates a dependency on one
// replica isolates it on every replica (cause fleet_isolated), a replica
// that starts later learns the isolation from Redis, and a reset on another
// replica closes them all (cause fleet_reset) — each applied once, never
// echoed back.
func TestOperatorActionsTravel(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 3, testPolicy(time.Minute))
	// Everything the fleet publishes from now on.
	sub := redis.NewClient(&redis.Options{Addr: srv.Addr()}).Subscribe(t.Context(), rs[0].prefix+":events")
	defer sub.Close()
	if _, err := sub.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}

	if err := rs[0].reg.Isolate(dep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs[1:] {
		r.await(t, 5*time.Second, "fleet_isolated", isCause(registry.CauseFleetIsolated))
		if _, d := r.b.Admit(); d.Allowed || d.RetryAfter != registry.UntilReset {
			t.Errorf("%s after the fleet isolation: %+v, want refused until reset", r.name, d)
		}
	}

	late := newReplica(t, "late", srv.Addr(), testPolicy(time.Minute), fleet.WithPrefix(rs[0].prefix))
	waitHealthy(t, late)
	late.await(t, 5*time.Second, "fleet_isolated on a replica that started later", isCause(registry.CauseFleetIsolated))

	rs[1].reg.Reset(dep)
	for _, r := range []*replica{rs[0], rs[2], late} {
		r.await(t, 5*time.Second, "fleet_reset", isCause(registry.CauseFleetReset))
		if st := r.b.State(); st != registry.StateClosed {
			t.Errorf("%s after the fleet reset: %v", r.name, st)
		}
	}
	// Each action was published once and echoed by nobody: after the reset,
	// every replica trips a marker dependency of its own; a replica
	// publishes in order, so anything it would have echoed is on the
	// channel before its marker.
	everyone := append(rs, late)
	for i, r := range everyone {
		marker := registry.Key(fmt.Sprintf("marker-%d", i))
		tk, _ := mustGetBreaker(t, r, marker).Admit()
		tk.Done(registry.Failure)
	}
	kinds := map[string]int{}
	markers := 0
	for markers < len(everyone) {
		m, err := sub.ReceiveMessage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(m.Payload, "|")
		if len(parts) == 7 && strings.HasPrefix(parts[6], "marker-") {
			markers++
		} else if len(parts) == 7 {
			kinds[parts[1]]++
		}
	}
	if kinds["isolate"] != 1 || kinds["reset"] != 1 {
		t.Errorf("decisions on the channel: %v, want the isolate and the reset once each (no echo)", kinds)
	}
	if s := rs[0].f.Stats(); s.Published < 1 {
		t.Errorf("isolating replica published %d decisions", s.Published)
	}
}

// TestLocalOperatorActions: with WithLocalOperatorActions an operator's
// isolate stays on its replica.
func TestLocalOperatorActions(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 2, testPolicy(time.Minute), fleet.WithLocalOperatorActions())
	if err := rs[0].reg.Isolate(dep); err != nil {
		t.Fatal(err)
	}
	// A marker trip published after the isolation arrives after anything
	// the isolation would have sent.
	marker := registry.Key("marker-api")
	mustGetBreaker(t, rs[1], marker)
	tk, _ := mustGetBreaker(t, rs[0], marker).Admit()
	tk.Done(registry.Failure)
	tr := rs[1].await(t, 5*time.Second, "any transition", func(registry.Transition) bool { return true })
	if tr.Key != marker || tr.Cause != registry.CauseFleetOpen {
		t.Errorf("first transition on the other replica: %v, want only the marker's fleet_open", tr)
	}
	if st := rs[1].b.State(); st != registry.StateClosed {
		t.Errorf("the other replica's %s is %v: a local isolation travelled", dep, st)
	}
}
