package mcpguard_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
)

// elicitingServer is a go-sdk server whose tool "ask" asks the client for a
// name (elicitation); Dial connects a fresh in-memory pair to it.
func elicitingServer(t *testing.T) func(context.Context) (mcp.Transport, error) {
	// Legacy versions: on protocol 2026-07-28 a server asks for input with a
	// multi round-trip result instead of a request to the client.
	srv := mcp.NewServer(&mcp.Implementation{Name: "elicit", Version: "v1"}, legacyServerOptions())
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		name, _ := res.Content["name"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + name}}}, nil, nil
	})
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct, nil
	}
}

// TestElicitationHandlerTime: Server.Client gives the guard's client the
// user's elicitation handler, and the time a person takes in it is not the
// server's slowness: a call whose CallTimeout runs out while the handler
// waits ends as cancelled (client_handler), is not retried and is not
// charged to the breaker. With no handler the go-sdk refuses the server's
// request at once and the call ends with the server's answer, not a hang.
func TestElicitationHandlerTime(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "el", Dial: elicitingServer(t),
				Client: &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					time.Sleep(time.Second) // a person typing
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
				}}}})
			defer g.Close()
			tools, err := discover(t, t.Context(), g, "inv")
			if err != nil {
				t.Fatal(err)
			}
			out, err := tools["ask"].Run(newToolCtx(t.Context()), map[string]any{})
			if err != nil || !strings.Contains(toJSON(out), "accept:ada") {
				t.Errorf("ask = %s, %v; want accept:ada", toJSON(out), err)
			}
		})
	})
	t.Run("person too slow", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			reg := testRegistry(t)
			g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "el", Dial: elicitingServer(t), CallTimeout: 2 * time.Second,
				Client: &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					select {
					case <-ctx.Done():
					case <-release:
					}
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}}}})
			defer g.Close()
			defer close(release)
			tools, err := discover(t, t.Context(), g, "inv")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = tools["ask"].Run(newToolCtx(t.Context()), map[string]any{})
			e := asError(t, err)
			if e.Class != mcpguard.ClassCancelled || e.Reason != mcpguard.ReasonClientHandler || e.Attempts != 1 {
				t.Errorf("err = %v (class %s, reason %s, %d attempts), want cancelled/client_handler, 1 attempt", err, e.Class, e.Reason, e.Attempts)
			}
			if d := time.Since(start); d != 2*time.Second {
				t.Errorf("the call ended after %v, want CallTimeout (2s)", d)
			}
			br, _ := reg.Get("el")
			if c := br.Counts(); c.Failures != 0 {
				t.Errorf("breaker charged %d failures for the person's time", c.Failures)
			}
		})
	})
	t.Run("no handler", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "el", Dial: elicitingServer(t)}})
			defer g.Close()
			tools, err := discover(t, t.Context(), g, "inv")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := tools["ask"].Run(newToolCtx(t.Context()), map[string]any{})
			if d := time.Since(start); d != 0 {
				t.Errorf("without a handler the call took %v, want an answer at once", d)
			}
			if h := g.Health()[0]; err != nil || h.Outcome != mcpguard.ClassRefused {
				t.Errorf("ask = %s, %v (outcome %s); want the tool's error result (refused)", toJSON(out), err, h.Outcome)
			}
		})
	})
}
