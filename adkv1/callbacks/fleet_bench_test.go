package callbacks_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/internal/redistest"
)

// commandCounter is a go-redis hook counting every command and pipeline.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// newFleetHandler returns a handler whose registry shares state through a
// real redis-server, once the fleet is healthy. Background resyncs and
// outcome sharing (one message per share interval, whatever the number of
// calls: package fleet's TestOutcomeMessagesPerIntervalNotPerCall) are
// pushed out of the measurement (1h, 1m), so every command counted would come
// from the tool path.
func newFleetHandler(tb testing.TB) (*callbacks.Handler, *fleet.Fleet, *commandCounter) {
	srv := redistest.New(tb, redistest.Options{})
	h := newHandler(tb)
	cc := &commandCounter{}
	f, err := fleet.New(h.Registry(), fleet.WithAddress(srv.Addr()), fleet.WithResyncInterval(time.Hour), fleet.WithShareInterval(time.Minute),
		fleet.WithTimeouts(time.Second, time.Second), fleet.WithRedisHook(cc), fleet.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.WaitHealthy(ctx); err != nil {
		tb.Fatal(err)
	}
	return h, f, cc
}

// TestToolPathMakesNoRedisCalls: 10,000 closed-path tool calls with fleet
// sharing enabled send zero commands to Redis.
func TestToolPathMakesNoRedisCalls(t *testing.T) {
	h, f, cc := newFleetHandler(t)
	ctx := &fakeToolCtx{std: context.Background(), inv: "inv", call: "call"}
	tl := &fakeTool{name: "get_invoice"}
	h.BeforeTool(ctx, tl, nil) // creates the breaker (its first resync is not the tool path's)
	h.AfterTool(ctx, tl, nil, nil, nil)
	// Let the resync that learns about the new breaker finish first: it is
	// background work, not the tool path's.
	r0 := f.Stats().Resyncs
	f.Resync()
	for deadline := time.Now().Add(10 * time.Second); f.Stats().Resyncs == r0; {
		if time.Now().After(deadline) {
			t.Fatal("no resync")
		}
		time.Sleep(time.Millisecond) // background Redis work, not registry state
	}
	before := cc.n.Load()
	for range 10_000 {
		if r, _ := h.BeforeTool(ctx, tl, nil); r != nil {
			t.Fatal("short-circuited")
		}
		h.AfterTool(ctx, tl, nil, nil, nil)
	}
	if n := cc.n.Load() - before; n != 0 {
		t.Fatalf("%d Redis commands during 10,000 tool calls", n)
	}
	if !f.Healthy() {
		t.Fatal("fleet not healthy")
	}
}

// TestToolPathDoesNotWaitForABlackholedRedis: with the fleet pointed at a
// listener that accepts and never answers, tool calls (closed path) take no
// longer than the fleet's command timeout would add.
func TestToolPathDoesNotWaitForABlackholedRedis(t *testing.T) {
	bh, err := redistest.NewBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer bh.Close()
	h := newHandler(t)
	f, err := fleet.New(h.Registry(), fleet.WithAddress(bh.Addr()), fleet.WithTimeouts(time.Second, time.Second), fleet.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := &fakeToolCtx{std: context.Background(), inv: "inv", call: "call"}
	tl := &fakeTool{name: "get_invoice"}
	var worst time.Duration
	for range 2000 {
		start := time.Now()
		h.BeforeTool(ctx, tl, nil)
		h.AfterTool(ctx, tl, nil, nil, nil)
		worst = max(worst, time.Since(start))
	}
	if worst > 500*time.Millisecond {
		t.Fatalf("a tool call took %v with Redis blackholed (command timeout 1s)", worst)
	}
}

// BenchmarkToolPathFleet is BenchmarkToolPath's closed case with fleet
// sharing on (a real redis-server), to read next to BenchmarkToolPath's
// gobreaker and closed baselines; the bound is the same: ≤ 1.5× gobreaker,
// 1 allocation. It also reports Redis commands per call (0):
//
//	go test -run '^$' -bench 'ToolPath(Fleet)?/(gobreaker|closed|closed-fleet)$' ./callbacks
func BenchmarkToolPathFleet(b *testing.B) {
	b.Run("closed-fleet", func(b *testing.B) {
		h, _, cc := newFleetHandler(b)
		ctx := &fakeToolCtx{std: context.Background(), inv: "e-inv", call: "adk-call"}
		tl := &fakeTool{name: "get_invoice"}
		before := cc.n.Load()
		b.ReportAllocs()
		for b.Loop() {
			if r, _ := h.BeforeTool(ctx, tl, nil); r != nil {
				b.Fatal("short-circuited")
			}
			h.AfterTool(ctx, tl, nil, nil, nil)
		}
		b.ReportMetric(float64(cc.n.Load()-before)/float64(b.N), "redis-cmds/op")
	})
}
