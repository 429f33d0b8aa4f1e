package mcpguard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
)

// TestListChangedDuringDiscovery: a tools/list_changed that arrives while a
// discovery is reading the list (which may predate the change) leaves the
// list stale: the next Tools lists again and offers the new tool. Before,
// the discovery's end cleared the notice and the new tool waited ToolsTTL.
// On the legacy protocol (a go-sdk server keeping sessions, pinned on the
// ADK v2 line), in-process.
func TestListChangedDuringDiscovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "lc", Version: "v1"}, legacyServerOptions())
		mcp.AddTool(srv, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		var lists atomic.Int32
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "tools/list" && lists.Add(1) == 1 {
					// The list is read; the server changes while it is
					// answered, and its notice reaches the client first.
					mcp.AddTool(srv, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{}, nil, nil
					})
					time.Sleep(time.Second)
				}
				return res, err
			}
		})
		dial := func(context.Context) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = ss.Close() })
			return ct, nil
		}
		g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "lc", Dial: dial}})
		defer g.Close()
		tools, err := discover(t, t.Context(), g, "inv-1")
		if err != nil || tools["first"] == nil {
			t.Fatalf("tools = %v, %v", keys(tools), err)
		}
		synctest.Wait()
		tools, err = discover(t, t.Context(), g, "inv-2")
		if err != nil || tools["late"] == nil {
			t.Errorf("after a list_changed during the discovery: tools %v, %v (tools/list sent %d times); want the new tool", keys(tools), err, lists.Load())
		}
	})
}
