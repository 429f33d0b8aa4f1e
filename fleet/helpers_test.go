package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/internal/redistest"
	"github.com/adkbreaker/adkbreaker/registry"
)

const dep registry.Key = "enrichment-api"

// replica is one agent replica: its own registry, breaker and fleet client.
type replica struct {
	name   string
	prefix string
	reg    *registry.Registry
	b      *registry.Breaker
	f      *fleet.Fleet
	events chan registry.Transition
}

// testPolicy trips on one failure and holds for hold, without jitter.
func testPolicy(hold time.Duration) registry.Policy {
	return registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: hold, OpenBackoff: 1, NoJitter: true, ProbeLease: 5 * time.Second}
}

// newReplicas starts n replicas sharing addr under prefix, and waits until
// every one is sharing.
func newReplicas(t testing.TB, addr string, n int, pol registry.Policy, opts ...fleet.Option) []*replica {
	t.Helper()
	prefix := fmt.Sprintf("t%d", time.Now().UnixNano())
	var rs []*replica
	for i := range n {
		r := newReplica(t, fmt.Sprintf("r%d", i), addr, pol, append([]fleet.Option{fleet.WithPrefix(prefix)}, opts...)...)
		r.prefix = prefix
		rs = append(rs, r)
	}
	all = rs
	waitHealthy(t, rs...)
	return rs
}

func newReplica(t testing.TB, name, addr string, pol registry.Policy, opts ...fleet.Option) *replica {
	t.Helper()
	reg := registry.MustNew(registry.WithPolicy(dep, pol), registry.WithDefaultPolicy(pol), registry.WithMaxBreakers(4096))
	b, err := reg.Get(dep)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, reg: reg, b: b, events: make(chan registry.Transition, 4096)}
	t.Cleanup(reg.Subscribe(func(tr registry.Transition) {
		select {
		case r.events <- tr:
		default:
		}
	}))
	all := append([]fleet.Option{fleet.WithAddress(addr), fleet.WithReplicaID(name),
		fleet.WithTimeouts(5*time.Second, 5*time.Second), fleet.WithLogger(discard)}, opts...)
	f, err := fleet.New(reg, all...)
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	t.Cleanup(func() { _ = f.Close() })
	return r
}

func waitHealthy(t testing.TB, rs ...*replica) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, r := range rs {
		if err := r.f.WaitHealthy(ctx); err != nil {
			t.Fatalf("%s never became healthy: %v (stats %+v)", r.name, err, r.f.Stats())
		}
	}
}

// await waits for a transition of r matching ok, for at most d.
func (r *replica) await(t testing.TB, d time.Duration, what string, ok func(registry.Transition) bool) registry.Transition {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case tr := <-r.events:
			if ok(tr) {
				return tr
			}
		case <-timer.C:
			for _, o := range all {
				t.Logf("%s: state %v stats %+v", o.name, o.b.State(), o.f.Stats())
			}
			t.Fatalf("%s: no %s within %s", r.name, what, d)
			return registry.Transition{}
		}
	}
}

func (r *replica) drain() {
	for {
		select {
		case <-r.events:
		default:
			return
		}
	}
}

func isCause(c registry.Cause) func(registry.Transition) bool {
	return func(tr registry.Transition) bool { return tr.Cause == c }
}

// fail admits one call on r and reports it failed (tripping a testPolicy).
func (r *replica) fail(t testing.TB) {
	t.Helper()
	tk, d := r.b.Admit()
	if !d.Allowed {
		t.Fatalf("%s: refused %+v", r.name, d)
	}
	tk.Done(registry.Failure)
}

var discard = slog.New(slog.DiscardHandler)

// all is the last set of replicas started, for failure reports.
var all []*replica

// redisServer starts a redis-server for t (fails under CI=true without one).
func redisServer(t testing.TB) *redistest.Server { return redistest.New(t, redistest.Options{}) }

// quantile returns the q-quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	sortDurations(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func fmtMsg(kind string, gen uint64, holdMs int64, origin string) string {
	return fmtMsgDep(kind, gen, holdMs, origin, string(dep))
}

func fmtMsgDep(kind string, gen uint64, holdMs int64, origin, key string) string {
	return fmt.Sprintf("1|%s|%d|%d|trip|%s|%s", kind, gen, holdMs, origin, key)
}

// prefixOf returns the key prefix the replicas of a test share.
func prefixOf(t testing.TB, r *replica) string {
	t.Helper()
	return r.prefix
}

// genOf reads the fleet generation of dep from Redis.
func genOf(t testing.TB, c *redis.Client, prefix string) uint64 {
	t.Helper()
	s, err := c.HGet(context.Background(), prefix+":state:"+string(dep), "gen").Result()
	if err != nil {
		t.Fatal(err)
	}
	g, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustGetBreaker(t testing.TB, r *replica, k registry.Key) *registry.Breaker {
	t.Helper()
	b, err := r.reg.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
