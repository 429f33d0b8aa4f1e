package fleet_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// resyncGate is a go-redis hook that holds the first resync read (the
// HMGET pipeline) after Redis answered it, until released.
type resyncGate struct {
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (g *resyncGate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *resyncGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (g *resyncGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "hmget" && g.armed.CompareAndSwap(true, false) {
			close(g.held)
			<-g.release
		}
		return err
	}
}

// subscribedLines sends on ch each time the fleet logs a new subscription.
type subscribedLines chan struct{}

func (s subscribedLines) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "adkbreaker fleet: subscribed") {
		s <- struct{}{}
	}
	return len(p), nil
}

// TestResyncOfANewSubscriptionIsNotLost: every subscription asks for a
// resync, also when the resyncer is busy (here: still in the previous
// resync) or not yet waiting (a replica's first subscription, its resyncer
// just started). The request was a send on an unbuffered channel, dropped
// unless the resyncer was waiting at that instant, so a decision stored
// while the replica was not subscribed waited for the next periodic resync
// (5 s by default): the CI flake where a replica started later did not
// learn the fleet's isolation within 5 s (TestOperatorActionsTravel).
func TestResyncOfANewSubscriptionIsNotLost(t *testing.T) {
	srv := redisServer(t)
	gate := &resyncGate{held: make(chan struct{}), release: make(chan struct{})}
	gate.armed.Store(true)
	subscribed := make(subscribedLines, 4)
	r := newReplicas(t, srv.Addr(), 1, testPolicy(time.Minute),
		fleet.WithResyncInterval(time.Hour), fleet.WithRedisHook(gate),
		fleet.WithLogger(slog.New(slog.NewTextHandler(subscribed, nil))))[0]
	var released sync.Once
	releaseGate := func() { released.Do(func() { close(gate.release) }) }
	t.Cleanup(releaseGate) // runs before the replica's Close, which waits for its resyncer
	<-subscribed
	<-gate.held // the first subscription's resync read Redis; it is held

	// A decision stored while r is not subscribed: only a resync learns it.
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer raw.Close()
	ctx := t.Context()
	if err := raw.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	now, err := raw.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	state := r.prefix + ":state:" + string(dep)
	if err := raw.HSet(ctx, state, "gen", now.UnixMicro(), "kind", "isolate", "origin", "operator-replica").Err(); err != nil {
		t.Fatal(err)
	}
	<-subscribed // the second subscription asked for its resync
	for range 100 {
		runtime.Gosched() // let it finish asking (the request follows the log line)
	}
	releaseGate()
	r.await(t, 5*time.Second, "fleet_isolated from the new subscription's resync", isCause(registry.CauseFleetIsolated))
}
