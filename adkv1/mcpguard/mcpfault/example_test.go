package mcpfault_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// A truncated response: the tool ran once on the server, and the client got
// no answer. Executions is how a test proves a call was not repeated.
func Example() {
	ctx := context.Background()
	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Truncated})
	defer fs.Close()

	t, err := fs.Dial(ctx)
	if err != nil {
		panic(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil)
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		panic(err)
	}
	defer sess.Close()
	_, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 3}})
	fmt.Println("answered:", err == nil)
	fmt.Println("charge ran:", fs.Executions("charge"))
	// Output:
	// answered: false
	// charge ran: 1
}

// The same server over streamable HTTP on 127.0.0.1, with a 50-page tool
// list.
func ExampleServer_HTTPDial() {
	ctx := context.Background()
	fs := mcpfault.New(mcpfault.Config{Filler: 95, Pages: 50})
	defer fs.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	t, _ := fs.HTTPDial(&http.Client{Transport: tr})(ctx)
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, t, nil)
	if err != nil {
		panic(err)
	}
	defer sess.Close()
	n := 0
	for _, err := range sess.Tools(ctx, nil) {
		if err != nil {
			panic(err)
		}
		n++
	}
	fmt.Println(n, "tools in", fs.Requests("tools/list"), "pages")
	// Output: 100 tools in 50 pages
}

func ExampleModes() {
	for _, m := range mcpfault.Modes() {
		fmt.Print(m, " ")
	}
	fmt.Println()
	// Output: NONE UNREACHABLE BLACKHOLE SLOW_LIST SLOW_CALL FLAPPING MALFORMED TRUNCATED OVERSIZED SCHEMA_VIOLATION DROPPED
}
