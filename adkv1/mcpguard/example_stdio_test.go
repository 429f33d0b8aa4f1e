package mcpguard_test

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// A stdio server: Dial returns an mcp.CommandTransport with a new command
// for every (re)connection, so a process that dies is replaced by a new one
// on the next operation. TerminateDuration bounds how long Close waits for
// the process to exit once its stdin is closed.
func ExampleServer_stdio() {
	srv := mcpguard.Server{
		Name: "memory", Capability: "long-term memory", ToolPrefix: "memory_",
		Dial: func(context.Context) (mcp.Transport, error) {
			cmd := exec.Command("/usr/local/bin/memory-server") // a command runs once: build it here
			return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
		},
		ConnectTimeout: 15 * time.Second, // a process start is slower than a dial
	}
	reg := registry.MustNew(mcpguard.RegistryOptions(srv)...)
	g, err := mcpguard.New(reg, []mcpguard.Server{srv})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	fmt.Println(g.Health()[0].Server, g.Health()[0].Connected)
	// Output: memory false
}

// Client-side handlers: the guard's client for the server answers the
// server's elicitation requests with the user's handler, on every
// reconnection.
func ExampleServer_client() {
	srv := mcpguard.Server{
		Name: "forms", Dial: mcpguard.StreamableHTTP("http://127.0.0.1:1/mcp", nil),
		Client: &mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil // ask the user here
			},
		},
	}
	fmt.Println(srv.Validate())
	srv.Session = &mcp.ClientSession{}
	srv.Dial = nil
	fmt.Println(srv.Validate() != nil) // handlers do not apply to a caller's own session
	// Output:
	// <nil>
	// true
}
