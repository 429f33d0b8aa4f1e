package mcpguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// A guard for one healthy server: Start connects and reads the tool list;
// Health shows the result.
func Example() {
	fs := mcpfault.New(mcpfault.Config{}) // an in-process MCP server
	defer fs.Close()

	servers := []mcpguard.Server{{
		Name: "files", Required: true, Dial: fs.Dial,
		CallTimeout: 10 * time.Second, OperationBudget: 15 * time.Second,
		IdempotentTools: []string{"echo", "lookup"},
	}}
	reg := registry.MustNew(mcpguard.RegistryOptions(servers...)...)
	g, err := mcpguard.New(reg, servers)
	if err != nil {
		panic(err)
	}
	defer g.Close()

	if err := g.Start(context.Background()); err != nil {
		panic(err)
	}
	h := g.Health()[0]
	fmt.Println(h.Server, h.State, h.Outcome, h.Tools, h.Connected)
	// Output: files closed ok 5 true
}

// A required server that cannot be reached fails assembly with a typed error
// that says where it stalled; the breaker counts it as the server's failure.
func ExampleGuard_Start() {
	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
	defer fs.Close()
	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{{
		Name: "billing", Required: true, Dial: fs.Dial, Retry: mcpguard.Retry{MaxAttempts: 1},
	}}, mcpguard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer g.Close()

	err := g.Start(context.Background())
	var e *mcpguard.Error
	if errors.As(err, &e) {
		fmt.Println(e.Server, e.Boundary, e.Class, e.Reason, e.BreakerOutcome())
	}
	fmt.Println(err)
	// Output:
	// billing connect fault connection_refused failure
	// mcpguard: server "billing": connect failed (connection_refused)
}

// When the budget is spent, the operation refuses to send and says so; the
// breaker does not count it.
func ExampleError_budgetExhausted() {
	e := &mcpguard.Error{
		Server: "weather", Operation: mcpguard.BoundaryCallTool, Boundary: mcpguard.BoundaryCallTool,
		Class: mcpguard.ClassBudgetExhausted, Reason: mcpguard.ReasonBudgetExhausted,
		Limit: mcpguard.LimitOperationBudget, Budget: 20 * time.Second, Cause: mcpguard.ErrBudgetExhausted,
	}
	fmt.Println(e)
	fmt.Println(errors.Is(e, mcpguard.ErrBudgetExhausted), e.BreakerOutcome(), e.DegradeReason())
	// Output:
	// mcpguard: server "weather": budget exhausted: operation budget 20s spent before call_tool could be sent; the server was not asked
	// true excluded budget_exhausted
}

// What an optional server's absence looks like to the model: one note in
// the system instruction of each request of the turn.
func ExampleGuard_Toolset() {
	fmt.Println(degrade.CapabilityNotice([]string{"weather forecasts"}))
	// Output: Temporarily unavailable: weather forecasts. Their tools are not offered in this turn, so do not try to call them. Continue with the tools you have, and tell the user if part of the request cannot be done.
}

// A server that runs each idempotency key once: every charge carries a new
// key, so a charge whose response was lost may be sent again (the key stays
// the same on every attempt), although charge is not in IdempotentTools.
func ExampleWithIdempotencyKeys() {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{{Name: "payments", Dial: fs.Dial}},
		mcpguard.WithIdempotencyKeys(func(_ agent.ToolContext, t *mcpguard.Tool, _ any) string {
			if t.RemoteName() != "charge" {
				return "" // no key: sent at most once after a fault
			}
			return mcpguard.NewIdempotencyKey()
		}))
	defer g.Close()
	tools, _ := g.Toolset().Tools(&roCtx{ctx: context.Background(), inv: "inv"})
	for _, t := range tools {
		if t.Name() == "charge" {
			out, err := t.(*mcpguard.Tool).Run(newToolCtx(context.Background()), map[string]any{"amount": 5})
			fmt.Println(out[mcpguard.KeyOutput], err)
		}
	}
	key, _ := fs.CallMeta("charge")[0][mcpguard.MetaIdempotencyKey].(string)
	fmt.Println(len(key))
	// Output:
	// charged 5 <nil>
	// 26
}

// The bounded raw payload of a protocol fault is for code and logs only.
func ExampleError_RawPayload() {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{{Name: "wx", Dial: fs.Dial}},
		mcpguard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer g.Close()
	tools, _ := g.Toolset().Tools(&roCtx{ctx: context.Background(), inv: "inv"})
	fs.SetMode(mcpfault.Malformed)
	for _, t := range tools {
		if t.Name() == "echo" {
			_, err := t.(*mcpguard.Tool).Run(newToolCtx(context.Background()), map[string]any{"text": "x"})
			var e *mcpguard.Error
			if errors.As(err, &e) {
				fmt.Println(e)              // what the model may see
				fmt.Println(e.RawPayload()) // what the server sent, bounded
			}
		}
	}
	// Output:
	// mcpguard: server "wx": call_tool returned an invalid response (malformed_response); tool "echo"
	// {"content":"not-a-list","isError":"nope"}
}

// After Start, Degraded lists the optional servers the agent starts
// without; here the optional "search" server is down, one a legacy server
// (before the sessionless protocol) and one a current server are healthy:
// one toolset serves both.
func ExampleGuard_Degraded() {
	legacy := mcpfault.New(mcpfault.Config{Legacy: true})
	defer legacy.Close()
	current := mcpfault.New(mcpfault.Config{})
	defer current.Close()
	down := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
	defer down.Close()

	g := mcpguard.MustNew(registry.MustNew(), []mcpguard.Server{
		{Name: "files", Required: true, Dial: legacy.Dial},
		{Name: "notes", Dial: current.Dial, ToolPrefix: "notes_"},
		{Name: "search", Capability: "web search", Dial: down.Dial, Retry: mcpguard.Retry{MaxAttempts: 1}},
	}, mcpguard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer g.Close()

	if err := g.Start(context.Background()); err != nil {
		panic(err) // only a required server fails Start
	}
	for _, d := range g.Degraded() {
		fmt.Println(d.Server, d.Capability, d.LastGood, d.Err)
	}
	for _, h := range g.Health() {
		fmt.Println(h.Server, h.Outcome, h.Tools)
	}
	// Output:
	// search web search false mcpguard: server "search": connect failed (connection_refused)
	// files ok 5
	// notes ok 5
	// search fault 0
}
