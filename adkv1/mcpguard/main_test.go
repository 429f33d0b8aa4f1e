package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv makes the test binary an MCP server over stdio (for the
// stdio tests, which start it with mcp.CommandTransport).
const stdioServerEnv = "MCPGUARD_TEST_STDIO_SERVER"

// TestMain silences the default logger: tests that check log lines pass
// their own with WithLogger.
func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		serveStdio()
		os.Exit(0)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

// serveStdio serves a go-sdk server over stdin/stdout until stdin closes.
// Its tool "pid" answers the process ID.
func serveStdio() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "stdio", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, map[string]any{"pid": os.Getpid()}, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}
