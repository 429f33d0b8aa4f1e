package fleet_test

import (
	"context"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestCrashedProbeHolderLeaseExpires: the replica holding the fleet's probe
// lease dies mid-probe (its fleet client stops, the probe never reports).
// The others keep refusing with half_open_busy until the lease's TTL, then
// one of them takes the lease and probes.
func TestCrashedProbeHolderLeaseExpires(t *testing.T) {
	srv := redisServer(t)
	pol := testPolicy(20 * time.Millisecond)
	pol.ProbeLease = 400 * time.Millisecond // the lease = the probe's call timeout
	rs := newReplicas(t, srv.Addr(), 3, pol)
	a := rs[0]
	a.fail(t)
	for _, r := range rs[1:] {
		r.await(t, 5*time.Second, "fleet_open", isCause(registry.CauseFleetOpen))
	}
	// a takes the lease and admits its probe after the hold.
	var probe registry.Ticket
	for !probe.Valid() {
		tk, d := a.b.Admit()
		if d.Allowed {
			probe = tk
			break
		}
		time.Sleep(time.Millisecond) // traffic
	}
	if !probe.Probe() {
		t.Fatal("a's admitted call is not a probe")
	}
	leaseAt := time.Now()
	_ = a.f.Close() // crash: the lease stays in Redis until its TTL

	// b and c refuse until the lease expires, then exactly one probes.
	var winner *replica
	var busy int
	for winner == nil {
		for _, r := range rs[1:] {
			tk, d := r.b.Admit()
			if d.Allowed {
				if !tk.Probe() {
					t.Fatalf("%s admitted a non-probe", r.name)
				}
				if since := time.Since(leaseAt); since < 350*time.Millisecond {
					t.Fatalf("%s probed %v after the crash, before the 400ms lease expired", r.name, since)
				}
				winner = r
				tk.Done(registry.Success)
				break
			}
			if d.Reason == registry.RefusedProbeBusy {
				busy++
			}
		}
		if time.Since(leaseAt) > 5*time.Second {
			t.Fatal("no replica probed within 5s of the crash")
		}
		time.Sleep(2 * time.Millisecond) // traffic
	}
	t.Logf("%s probed %v after the crash; %d half_open_busy refusals meanwhile", winner.name, time.Since(leaseAt).Round(time.Millisecond), busy)
	if busy == 0 {
		t.Error("no half_open_busy refusal while the crashed replica held the lease")
	}
	other := rs[1]
	if winner == other {
		other = rs[2]
	}
	other.await(t, 5*time.Second, "fleet_close", isCause(registry.CauseFleetClose))
	if other.b.State() != registry.StateClosed {
		t.Fatalf("%s: %v after the fleet's probe succeeded", other.name, other.b.State())
	}
	probe.Done(registry.Failure) // the crashed replica's late report changes nothing elsewhere
}

// rawClient is a plain client for writing to Redis behind the fleet's back.
func rawClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// twoReplicasAndChannel starts a redis-server and two replicas (holds of
// 10s) and returns a raw client, the fleet's key prefix and a function that
// publishes a message on the fleet's channel behind the replicas' backs.
func twoReplicasAndChannel(t *testing.T) (a, b *replica, raw *redis.Client, prefix string, send func(string)) {
	t.Helper()
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 2, testPolicy(10*time.Second))
	raw = rawClient(t, srv.Addr())
	prefix = prefixOf(t, rs[0])
	send = func(msg string) {
		t.Helper()
		if err := raw.Publish(context.Background(), prefix+":events", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return rs[0], rs[1], raw, prefix, send
}

// TestStaleAndDuplicateMessages: messages replayed, reordered or forged
// with an old generation never shorten a hold and never reopen a closed
// breaker; a replica ignores its own ID.
func TestStaleAndDuplicateMessages(t *testing.T) {
	a, b, raw, prefix, send := twoReplicasAndChannel(t)
	ctx := context.Background()
	a.fail(t)
	tr := b.await(t, 5*time.Second, "fleet_open", isCause(registry.CauseFleetOpen))
	gen := genOf(t, raw, prefix)
	hold := b.b.RetryAfter()
	if hold < 9*time.Second {
		t.Fatalf("adopted hold %v", hold)
	}
	_ = tr
	// A duplicate with a shorter hold, an older close, a newer but shorter
	// open: none may shorten or end the hold.
	send(fmtMsg("open", gen, 1000, "a"))
	send(fmtMsg("close", gen-1, 0, "a"))
	send(fmtMsg("open", gen+1, 1000, "a"))
	send(fmtMsg("garbage", gen+2, 0, "a"))
	send("not a message")
	send(fmtMsg("close", gen+3, 0, b.name)) // b's own ID: ignored
	// A marker with a newer generation for another dependency tells us the
	// messages above were all handled (pub/sub keeps order per connection).
	mustGetBreaker(t, b, "marker")
	send(fmtMsgDep("open", gen+4, 60000, "a", "marker"))
	b.await(t, 5*time.Second, "marker", func(tr registry.Transition) bool { return tr.Key == "marker" })
	if st, ra := b.b.State(), b.b.RetryAfter(); st != registry.StateOpen || ra < hold-time.Second {
		t.Fatalf("after stale, duplicate and shorter messages: %v, retry after %v (was %v)", st, ra, hold)
	}
	s := b.f.Stats()
	if s.Dropped["duplicate"] < 1 || s.Dropped["stale"] != 1 || s.Dropped["malformed"] != 2 || s.Dropped["own"] != 1 {
		t.Fatalf("drops = %v", s.Dropped)
	}
	// Close through the fleet (newer generation), then replay the old open:
	// it must not reopen.
	send(fmtMsg("close", gen+10, 0, "a"))
	b.await(t, 5*time.Second, "fleet_close", isCause(registry.CauseFleetClose))
	send(fmtMsg("open", gen, 60000, "a"))
	send(fmtMsg("open", gen+5, 60000, "a"))
	send(fmtMsgDep("close", gen+11, 0, "a", "marker"))
	b.await(t, 5*time.Second, "marker close", func(tr registry.Transition) bool { return tr.Key == "marker" })
	if st := b.b.State(); st != registry.StateClosed {
		t.Fatalf("a stale open reopened the closed breaker: %v", st)
	}
	// A resync reads the keys: the hold key written by a's trip is not newer
	// than the close, so nothing changes either.
	b.f.Resync()
	if st := b.b.State(); st != registry.StateClosed {
		t.Fatalf("resync reopened: %v", st)
	}
	// Every key the fleet wrote is under the prefix and expires.
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix+":") {
			t.Errorf("key %q outside the prefix %q", k, prefix)
		}
		if ttl := raw.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %q has no TTL (%v)", k, ttl)
		}
	}
	if len(keys) == 0 {
		t.Error("no keys written")
	}
}

// TestForgedFutureGenerationIsRepaired: a message forged on the channel with
// the largest generation would make a replica drop every genuine decision
// as stale; the next resync finds the known generation far ahead of the
// one Redis stores, brings it back and applies the stored decision.
func TestForgedFutureGenerationIsRepaired(t *testing.T) {
	a, b, _, _, send := twoReplicasAndChannel(t)
	send(fmtMsg("close", math.MaxUint64, 0, "intruder"))
	mustGetBreaker(t, b, "marker")
	send(fmtMsgDep("open", 1, 60000, "intruder", "marker")) // handled after the forged message (pub/sub keeps order)
	b.await(t, 5*time.Second, "marker", func(tr registry.Transition) bool { return tr.Key == "marker" })

	a.fail(t) // a genuine trip: stored, then broadcast with Redis's clock as generation
	// b drops it as stale: it is stored by then (decisions are stored
	// before they are broadcast).
	for deadline := time.Now().Add(5 * time.Second); b.f.Stats().Dropped["stale"] == 0; {
		if time.Now().After(deadline) {
			t.Fatal("b never received a's decision")
		}
		runtime.Gosched()
	}
	if st := b.b.State(); st != registry.StateClosed {
		t.Fatalf("b = %v before the resync: the forged generation did not stall it, so this test shows nothing", st)
	}
	b.f.Resync()
	b.await(t, 5*time.Second, "fleet_open after the repair", isCause(registry.CauseFleetOpen))
	if st := b.b.State(); st != registry.StateOpen {
		t.Fatalf("b = %v, want open", st)
	}
	if n := b.f.Stats().GenerationRepairs; n != 1 {
		t.Fatalf("generation repairs = %d, want 1", n)
	}
	if n := a.f.Stats().GenerationRepairs; n != 0 {
		t.Fatalf("a, which never saw a forged generation ahead of Redis, repaired %d", n)
	}
}
