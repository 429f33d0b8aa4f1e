package mcpguard_test

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
)

// TestStdioServerNewProcessPerConnection: a stdio server is a Dial that
// returns an mcp.CommandTransport; each (re)connection starts a new
// process. The server's process is killed while idle: the next call
// (an idempotent tool) is answered by a new process. Close closes stdin
// and reaps the process (waiting at most the transport's
// TerminateDuration before SIGTERM).
func TestStdioServerNewProcessPerConnection(t *testing.T) {
	var mu sync.Mutex
	var cmds []*exec.Cmd
	dial := func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), stdioServerEnv+"=1")
		mu.Lock()
		cmds = append(cmds, cmd)
		mu.Unlock()
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil
	}
	g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "stdio", Dial: dial, IdempotentTools: []string{"pid"},
		ConnectTimeout: 15 * time.Second, OperationBudget: 45 * time.Second}})
	defer g.Close()
	ctx := t.Context()
	tools, err := discover(t, ctx, g, "inv")
	if err != nil {
		t.Fatal(err)
	}
	pid := func() float64 {
		t.Helper()
		out, err := tools["pid"].Run(newToolCtx(ctx), map[string]any{})
		if err != nil {
			t.Fatalf("pid: %v", err)
		}
		m, _ := out[mcpguard.KeyOutput].(map[string]any)
		p, _ := m["pid"].(float64)
		return p
	}
	first := pid()
	mu.Lock()
	proc := cmds[0].Process
	mu.Unlock()
	if first != float64(proc.Pid) {
		t.Fatalf("pid %v, want the started process %d", first, proc.Pid)
	}
	_ = proc.Kill()
	second := pid()
	mu.Lock()
	n, last := len(cmds), cmds[len(cmds)-1]
	mu.Unlock()
	if second == first || n != 2 || second != float64(last.Process.Pid) {
		t.Errorf("after a kill: pid %v (before %v), %d processes started; want a second process", second, first, n)
	}
	_ = g.Close()
	if last.ProcessState == nil {
		t.Error("Close returned with the server's process not reaped")
	}
}
