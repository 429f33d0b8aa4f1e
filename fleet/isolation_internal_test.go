package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/redistest"
	"github.com/adkbreaker/adkbreaker/registry"
)

// internalReplica starts a registry and its fleet client under prefix, and
// waits until it is sharing. await waits for a transition of cause watch.
func internalReplica(t *testing.T, addr, prefix, name string, watch registry.Cause, opts ...Option) (reg *registry.Registry, f *Fleet, await func()) {
	t.Helper()
	pol := registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: time.Minute, NoJitter: true}
	reg = registry.MustNew(registry.WithDefaultPolicy(pol))
	if _, err := reg.Get("api"); err != nil {
		t.Fatal(err)
	}
	await = awaitCause(t, reg, watch)
	f, err := New(reg, append([]Option{WithAddress(addr), WithPrefix(prefix), WithReplicaID(name),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	return reg, f, await
}

// awaitCause subscribes to reg and returns a function that waits (at most
// 5 s) for a transition of cause c.
func awaitCause(t *testing.T, reg *registry.Registry, c registry.Cause) func() {
	t.Helper()
	ch := make(chan struct{}, 16)
	t.Cleanup(reg.Subscribe(func(tr registry.Transition) {
		if tr.Cause == c {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}))
	return func() {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v transition within 5s", c)
		}
	}
}

// TestProbeCloseDoesNotUndoIsolation: a replica whose half-open probe was
// admitted before an operator isolated the dependency on another replica,
// and succeeded before the isolation reached it, publishes its close after
// the isolation. That close must not end the fleet's isolation: it deleted
// the hold key and overwrote the state, so a replica started afterwards was
// not isolated and the fleet could probe the isolated dependency.
func TestProbeCloseDoesNotUndoIsolation(t *testing.T) {
	srv := redistest.New(t, redistest.Options{})
	prefix := fmt.Sprintf("iso%d", time.Now().UnixNano())
	regA, _, _ := internalReplica(t, srv.Addr(), prefix, "a", registry.CauseFleetIsolated)
	_, fC, isolatedC := internalReplica(t, srv.Addr(), prefix, "c", registry.CauseFleetIsolated)
	if err := regA.Isolate("api"); err != nil {
		t.Fatal(err)
	}
	isolatedC()
	// The close C's probe published once it succeeded, after the isolation,
	// under the lease C held for it.
	state, hold, lease := fC.keys("api")
	ctx := context.Background()
	if err := fC.client.Set(ctx, lease, "c", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	fC.publish(outbound{key: "api", kind: kindClose, cause: registry.CauseProbeSucceeded})
	if n, _ := fC.client.Exists(ctx, lease).Result(); n != 0 {
		t.Errorf("the refused close kept its publisher's probe lease")
	}
	if kind, _ := fC.client.HGet(ctx, state, "kind").Result(); kind != kindIsolate {
		t.Errorf("fleet state after a stale probe close: %q, want %q", kind, kindIsolate)
	}
	if ttl, _ := fC.client.PTTL(ctx, hold).Result(); ttl <= 0 {
		t.Errorf("the isolation's hold key is gone after a stale probe close (PTTL %v)", ttl)
	}
	// The same for a trip racing the isolation.
	fC.publish(outbound{key: "api", kind: kindOpen, until: fC.clock.Now().Add(time.Second), cause: registry.CauseTrip})
	if kind, _ := fC.client.HGet(ctx, state, "kind").Result(); kind != kindIsolate {
		t.Errorf("fleet state after a stale open: %q, want %q", kind, kindIsolate)
	}
	_, _, isolatedLate := internalReplica(t, srv.Addr(), prefix, "late", registry.CauseFleetIsolated)
	isolatedLate() // learnt at its first resync
}

// TestStaleResetKeepsLocalIsolation: a replica with
// WithLocalOperatorActions whose operator isolates a dependency must not
// have that isolation ended by a reset the fleet recorded before it: its
// breaker did not exist when the reset went by (a tool first called
// later), so the replica knows no generation for it, and every resync read
// the old reset as news and reset the isolated breaker.
func TestStaleResetKeepsLocalIsolation(t *testing.T) {
	srv := redistest.New(t, redistest.Options{})
	prefix := fmt.Sprintf("iso%d", time.Now().UnixNano())
	_, fA, _ := internalReplica(t, srv.Addr(), prefix, "a", registry.CauseFleetReset)
	// An operator reset "lazy" on a (after a trip), before c had it.
	fA.publish(outbound{key: "lazy", kind: kindOpen, until: fA.clock.Now().Add(time.Minute), cause: registry.CauseTrip})
	fA.publish(outbound{key: "lazy", kind: kindReset, cause: registry.CauseReset})

	regC, fC, _ := internalReplica(t, srv.Addr(), prefix, "c", registry.CauseFleetReset, WithLocalOperatorActions())
	b, err := regC.Get("lazy") // first called now
	if err != nil {
		t.Fatal(err)
	}
	isolated := awaitCause(t, regC, registry.CauseIsolated) // after the fleet's subscription
	if err := regC.Isolate("lazy"); err != nil {
		t.Fatal(err)
	}
	isolated() // the fleet has seen it
	fC.resync()
	if !b.Status().Isolated {
		t.Fatalf("a reset recorded before the breaker existed ended its operator's isolation: %+v", b.Status())
	}
}

// TestUnpublishedResetSurvivesATrip: a replica cut off from Redis whose
// operator resets an isolated dependency, which then trips, keeps both
// decisions for when Redis returns: the reset ends the fleet's isolation.
// One slot per dependency kept only the trip, and the fleet stayed isolated.
func TestUnpublishedResetSurvivesATrip(t *testing.T) {
	srv := redistest.New(t, redistest.Options{})
	prefix := fmt.Sprintf("iso%d", time.Now().UnixNano())
	_, fA, isolatedA := internalReplica(t, srv.Addr(), prefix, "a", registry.CauseFleetIsolated)
	regB, _, resetB := internalReplica(t, srv.Addr(), prefix, "b", registry.CauseFleetReset)
	if err := regB.Isolate("api"); err != nil {
		t.Fatal(err)
	}
	isolatedA()

	// Redis away for a: what a publishes is kept. The breaker's own
	// transitions are made with the Adopt methods, which a never publishes,
	// so that only the decisions below are kept.
	fA.subscribed.Store(false)
	b, _ := fA.reg.Lookup("api")
	b.AdoptReset()
	fA.publish(outbound{key: "api", kind: kindReset, cause: registry.CauseReset})
	b.AdoptOpen(time.Minute)
	fA.publish(outbound{key: "api", kind: kindOpen, until: fA.clock.Now().Add(time.Minute), cause: registry.CauseTrip})

	fA.subscribed.Store(true) // Redis is back
	fA.flushUnpublished()
	resetB()
}

// TestLocalResetProbesDespiteFleetIsolation: a replica with
// WithLocalOperatorActions in a fleet that isolated a dependency, whose
// operator reset it there, may probe it again after a trip: the
// isolation's hold key (kept for the state TTL, a day by default) kept
// every lease request refused, the breaker half-open and refusing for as
// long.
func TestLocalResetProbesDespiteFleetIsolation(t *testing.T) {
	srv := redistest.New(t, redistest.Options{})
	prefix := fmt.Sprintf("iso%d", time.Now().UnixNano())
	regA, _, _ := internalReplica(t, srv.Addr(), prefix, "a", registry.CauseFleetIsolated)
	regL, fL, isolatedL := internalReplica(t, srv.Addr(), prefix, "l", registry.CauseFleetIsolated, WithLocalOperatorActions())
	if err := regA.Isolate("api"); err != nil {
		t.Fatal(err)
	}
	isolatedL()
	resetL := awaitCause(t, regL, registry.CauseReset) // after the fleet's subscription
	regL.Reset("api")                                  // this replica only
	resetL()
	d := fL.depFor("api")
	d.mu.Lock()
	d.lease = leaseAcquiring // as AllowProbe does for a half-open call
	d.mu.Unlock()
	fL.takeLease("api")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lease != leaseMine {
		t.Fatalf("lease after a local reset of a fleet isolation: %v until %v (%v from now)", d.lease, d.until, d.until.Sub(fL.clock.Now()))
	}
}
