package breaker_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/registry"
)

// soakInvocations is the figure, 100,000; SOAK_INVOCATIONS
// overrides it, -short runs a tenth and the race detector a fifth (the
// race detector finds the same races in 20,000 invocations, at a tenth of
// the speed; `go test` without it runs the full figure).
func soakInvocations(t *testing.T) int {
	if v := os.Getenv("SOAK_INVOCATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	switch {
	case testing.Short():
		return 10_000
	case raceEnabled:
		return 20_000
	}
	return 100_000
}

// TestSoakLeavesNoPerInvocationState runs invocations that end every way an
// invocation can end — success, tool failure, short-circuit, caller
// cancellation mid-tool, and a consumer that stops iterating early — and
// then checks that no per-invocation state is left and the heap did not grow.
func TestSoakLeavesNoPerInvocationState(t *testing.T) {
	n := soakInvocations(t)
	var cancelRun atomic.Pointer[context.CancelFunc]
	errDown := errors.New("connection refused by billing backend")

	mk := func(name string, fn func(agent.ToolContext) (map[string]any, error)) tool.Tool {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: name},
			func(ctx agent.ToolContext, _ struct{}) (map[string]any, error) { return fn(ctx) })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	tools := []tool.Tool{
		mk("ok_tool", func(agent.ToolContext) (map[string]any, error) { return map[string]any{"ok": true}, nil }),
		mk("fail_tool", func(agent.ToolContext) (map[string]any, error) { return nil, errDown }),
		mk("open_tool", func(agent.ToolContext) (map[string]any, error) { return map[string]any{"ok": true}, nil }),
		mk("cancel_tool", func(ctx agent.ToolContext) (map[string]any, error) {
			if c := cancelRun.Load(); c != nil {
				(*c)()
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}
	var which atomic.Value
	llm := scripted.New("scripted", func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: which.Load().(string)})
	}).WithoutLog()
	h, err := breaker.NewHandler(
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: time.Hour, DisableFailureRate: true}),
		breaker.WithPolicy("fail_tool", registry.Policy{ConsecutiveFailures: 1 << 30, DisableFailureRate: true}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Registry().Isolate("open_tool"); err != nil {
		t.Fatal(err)
	}
	p, _ := breaker.FromHandler(h, "")
	a, err := llmagent.New(llmagent.Config{Name: "soak", Model: llm, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "soak", Agent: a, SessionService: svc,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := genai.NewContentFromText("go", genai.RoleUser)
	kinds := []string{"ok_tool", "fail_tool", "open_tool", "cancel_tool", "break"}
	turn := func(i int) {
		kind := kinds[i%len(kinds)]
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sid := "s" + strconv.Itoa(i)
		if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "soak", UserID: "u", SessionID: sid}); err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "cancel_tool":
			cancelRun.Store(&cancel)
			which.Store(kind)
		case "break":
			which.Store("ok_tool")
		default:
			which.Store(kind)
		}
		for _, err := range r.Run(ctx, "u", sid, msg, agent.RunConfig{}) {
			if err != nil && kind != "cancel_tool" {
				t.Fatalf("invocation %d (%s): %v", i, kind, err)
			}
			if kind == "break" {
				break
			}
		}
		cancelRun.Store(nil)
		if err := svc.Delete(context.Background(), &session.DeleteRequest{AppName: "soak", UserID: "u", SessionID: sid}); err != nil {
			t.Fatal(err)
		}
	}
	warm := min(1000, n/10)
	for i := range warm {
		turn(i)
	}
	heapBefore := liveHeap()
	start := time.Now()
	for i := warm; i < n; i++ {
		turn(i)
	}
	elapsed := time.Since(start)
	heapAfter := liveHeap()

	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("after %d invocations: %d pending tickets, %d invocations with accounting", n, tk, inv)
	}
	growth := int64(heapAfter) - int64(heapBefore)
	t.Logf("%d invocations in %s (%.0f µs each); live heap %d → %d bytes (%+d)",
		n, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/float64(n-warm), heapBefore, heapAfter, growth)
	if growth > 1<<20 {
		t.Fatalf("live heap grew by %d bytes over %d invocations (limit 1 MiB)", growth, n)
	}
	// Every kind really happened.
	st := func(k registry.Key) registry.Counts { b, _ := h.Registry().Lookup(k); return b.Counts() }
	if c := st("fail_tool"); c.Failures == 0 {
		t.Fatalf("no failures counted: %+v", c)
	}
	if c := st("open_tool"); c.ShortCircuits == 0 {
		t.Fatalf("no short-circuits: %+v", c)
	}
	if c := st("cancel_tool"); c.Exclusions == 0 || c.Failures != 0 {
		t.Fatalf("cancellations not excluded: %+v", c)
	}
}

func liveHeap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
