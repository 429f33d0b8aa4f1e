// Package refserver drives the TypeScript reference MCP server
// (@modelcontextprotocol/server-everything, npm) from a real ADK agent
// through mcpguard and adkbreaker's plugin, and does to it what an operator
// does: kill it mid-call, freeze it (SIGSTOP), restart it on the same port
// after an outage the agent saw and while idle, kill a stdio server in
// flight. Run by scripts/realparts/reference-servers.sh, which installs the
// server and sets REALPARTS_NODE and REALPARTS_EVERYTHING_JS; without them
// the tests are skipped. They measure real time (processes, sockets): the
// numbers they print are the point, and the bounds they assert are the
// issue's acceptance bounds, with wide margins.
package refserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

const serverName = "everything"

// The policy under test: short limits so the drills take seconds.
const (
	callTimeout = 2 * time.Second
	budget      = 5 * time.Second
	openFor     = 3 * time.Second
	// restartOpenFor is the hold in the restart drill: longer than a node
	// process takes to listen, so the server is back with hold left.
	restartOpenFor = 10 * time.Second
)

// loopbackPreload makes the server listen on 127.0.0.1 only (it listens on
// every interface by default).
const loopbackPreload = `
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const cb = args.find((a) => typeof a === 'function');
    return listen.call(this, { port: Number(args[0]), host: '127.0.0.1' }, cb);
  }
  return listen.apply(this, args);
};
`

func parts(t *testing.T) (node, js string) {
	t.Helper()
	node, js = os.Getenv("REALPARTS_NODE"), os.Getenv("REALPARTS_EVERYTHING_JS")
	if node == "" || js == "" {
		t.Skip("REALPARTS_NODE and REALPARTS_EVERYTHING_JS not set (scripts/realparts/reference-servers.sh sets them)")
	}
	return node, js
}

// httpServer is one server-everything process over streamable HTTP.
type httpServer struct {
	t        *testing.T
	node, js string
	preload  string
	port     int
	cmd      *exec.Cmd
	done     chan struct{}
}

func newHTTPServer(t *testing.T) *httpServer {
	node, js := parts(t)
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(loopbackPreload), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &httpServer{t: t, node: node, js: js, preload: preload, port: port}
	t.Cleanup(s.kill)
	return s
}

func (s *httpServer) url() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.port) }

// start starts the process and returns when the port accepts connections
// (the moment the server listens).
func (s *httpServer) start() time.Time {
	s.t.Helper()
	cmd := exec.Command(s.node, "--require", s.preload, s.js, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(s.port))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return time.Now()
		}
		select {
		case <-s.done:
			s.t.Fatalf("server-everything exited before listening on %d", s.port)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server-everything did not listen on %d within 30s", s.port)
		}
		time.Sleep(20 * time.Millisecond) // polling a real process's port
	}
}

func (s *httpServer) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatal("no server process")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v to %d: %v", sig, s.cmd.Process.Pid, err)
	}
}

func (s *httpServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// callWatch signals each tools/call request that goes out.
type callWatch struct {
	calls chan string
}

func newCallWatch() *callWatch { return &callWatch{calls: make(chan string, 64)} }

func (w *callWatch) saw(method, name string) {
	if method == "tools/call" {
		select {
		case w.calls <- name:
		default:
		}
	}
}

// RoundTrip watches the HTTP requests' JSON-RPC methods.
type watchTransport struct {
	base http.RoundTripper
	w    *callWatch
}

func (rt watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Method == http.MethodPost {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) == nil {
			rt.w.saw(m.Method, m.Params.Name)
		}
	}
	return rt.base.RoundTrip(req)
}

// watchConnTransport watches the messages written on a stream transport.
type watchConnTransport struct {
	mcp.Transport
	w *callWatch
}

func (t watchConnTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return watchConn{c, t.w}, nil
}

type watchConn struct {
	mcp.Connection
	w *callWatch
}

func (c watchConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(r.Params, &p)
		c.w.saw(r.Method, p.Name)
	}
	return c.Connection.Write(ctx, m)
}

// agentRig is an ADK agent whose tools are the server's, through mcpguard,
// with adkbreaker's plugin first on the runner.
type agentRig struct {
	t     *testing.T
	reg   *registry.Registry
	guard *mcpguard.Guard
	r     *runner.Runner
	turn  int
	// budget is the server's OperationBudget.
	budget time.Duration
}

// newAgentRig builds the rig; connect bounds the handshake (a stdio server
// is a node process started per connection: seconds on a loaded machine),
// openFor is the breaker's first hold.
func newAgentRig(t *testing.T, connect, openFor time.Duration, dial func(context.Context) (mcp.Transport, error)) *agentRig {
	t.Helper()
	budget := max(budget, connect+3*time.Second)
	servers := []mcpguard.Server{{
		Name: serverName, Capability: "reference tools", Dial: dial,
		ConnectTimeout: connect, DiscoveryTimeout: 2 * time.Second, CallTimeout: callTimeout, OperationBudget: budget,
		IdempotentTools: []string{"echo"},
		Breaker: &registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true, OpenFor: openFor, NoJitter: true,
			ProbeLease: 2 * budget},
	}}
	reg := registry.MustNew(mcpguard.RegistryOptions(servers...)...)
	g, err := mcpguard.New(reg, servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	p, err := breaker.New(breaker.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	rig := &agentRig{t: t, reg: reg, guard: g, budget: budget}
	llm := scripted.New("s", func(req *model.LLMRequest) *model.LLMResponse {
		if len(scripted.LastResponses(req)) > 0 {
			return scripted.Text("done")
		}
		var c call
		if err := json.Unmarshal([]byte(req.Contents[len(req.Contents)-1].Parts[0].Text), &c); err != nil {
			return scripted.Text("bad request")
		}
		return scripted.CallTools(scripted.Call{Name: c.Tool, Args: c.Args})
	})
	a, err := llmagent.New(llmagent.Config{Name: "operator", Model: llm, Toolsets: []tool.Toolset{g.Toolset()}})
	if err != nil {
		t.Fatal(err)
	}
	rig.r, err = runner.New(runner.Config{AppName: "refserver", Agent: a, SessionService: session.InMemoryService(),
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	return rig
}

type call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// result is what one turn's tool call gave the model.
type result struct {
	ok, shortCircuit bool
	resp             map[string]any
	took             time.Duration
}

func (r result) String() string {
	b, _ := json.Marshal(r.resp)
	return fmt.Sprintf("ok=%v short-circuit=%v took=%v resp=%.200s", r.ok, r.shortCircuit, r.took.Round(time.Millisecond), b)
}

// callTool runs one turn in which the model calls tool with args.
func (rig *agentRig) callTool(ctx context.Context, toolName string, args map[string]any) result {
	rig.t.Helper()
	rig.turn++
	msg, _ := json.Marshal(call{Tool: toolName, Args: args})
	start := time.Now()
	var res result
	for ev, err := range rig.r.Run(ctx, "u", fmt.Sprintf("s%d", rig.turn), genai.NewContentFromText(string(msg), genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			rig.t.Logf("turn %d: run error: %v", rig.turn, err)
			continue
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == toolName {
				res.resp = fr.Response
			}
		}
	}
	res.took = time.Since(start)
	_, res.ok = res.resp["output"]
	res.shortCircuit = !res.ok && res.resp[degrade.KeyStatus] == degrade.StatusUnavailable
	return res
}

func (rig *agentRig) state() registry.State {
	b, ok := rig.reg.Lookup(serverName)
	if !ok {
		rig.t.Fatalf("no breaker %q", serverName)
	}
	return b.State()
}

func (rig *agentRig) retryAfter() time.Duration {
	b, _ := rig.reg.Lookup(serverName)
	return b.RetryAfter()
}

func (rig *agentRig) health() mcpguard.ServerHealth { return rig.guard.Health()[0] }

// report prints one measured line the script collects.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("REFSERVER %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

func echo(s string) map[string]any { return map[string]any{"message": s} }

// openBreaker makes calls until the breaker opens (the server is down or
// frozen), at most 4, and returns the results.
func (rig *agentRig) openBreaker(ctx context.Context) []result {
	rig.t.Helper()
	var rs []result
	for i := 0; i < 4 && rig.state() != registry.StateOpen; i++ {
		r := rig.callTool(ctx, "echo", echo("down?"))
		rs = append(rs, r)
		if r.ok {
			rig.t.Fatalf("a call succeeded while the server is down: %v", r)
		}
	}
	if rig.state() != registry.StateOpen {
		rig.t.Fatalf("breaker %v after %d failed calls, want open (health %+v)", rig.state(), len(rs), rig.health())
	}
	return rs
}

// untilSuccess calls echo every 100ms until a call succeeds (or limit) and
// returns the time of the first success and the calls that reached the
// server and failed on the way.
func (rig *agentRig) untilSuccess(ctx context.Context, limit time.Duration) (at time.Time, failedProbes, shortCircuits int, last result) {
	rig.t.Helper()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		r := rig.callTool(ctx, "echo", echo("back?"))
		last = r
		if r.ok {
			return time.Now(), failedProbes, shortCircuits, r
		}
		if r.shortCircuit {
			shortCircuits++
		} else {
			failedProbes++
			rig.t.Logf("failed probe: %v (health %+v)", r, rig.health())
		}
		time.Sleep(100 * time.Millisecond) // the measurement's granularity
	}
	return time.Time{}, failedProbes, shortCircuits, last
}

// TestHTTPKilledMidCallThenRestartedAfterOutage: a call in flight when the
// process is killed fails within the operation budget; the breaker opens;
// the server restarts on the same port; the first successful call comes no
// later than the hold left when it listens plus 1s, and closes the breaker.
func TestHTTPKilledMidCallThenRestartedAfterOutage(t *testing.T) {
	srv := newHTTPServer(t)
	srv.start()
	w := newCallWatch()
	dial := mcpguard.StreamableHTTP(srv.url(), &http.Client{Transport: watchTransport{http.DefaultTransport, w}})
	rig := newAgentRig(t, 2*time.Second, restartOpenFor, dial)
	ctx := t.Context()
	if err := rig.guard.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if r := rig.callTool(ctx, "echo", echo("hello")); !r.ok {
		t.Fatalf("first call: %v", r)
	}

	// Killed mid-call.
	done := make(chan result, 1)
	go func() {
		done <- rig.callTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 10, "steps": 10})
	}()
	for name := range w.calls {
		if name == "trigger-long-running-operation" {
			break
		}
	}
	srv.signal(syscall.SIGKILL)
	<-srv.done
	killed := <-done
	if killed.ok || killed.took > rig.budget+time.Second {
		t.Errorf("call in flight at the kill: %v; want a failure within the budget %v", killed, rig.budget)
	}
	report(t, "killed mid-call: the call failed after %v (budget %v)", killed.took.Round(time.Millisecond), rig.budget)
	opening := rig.openBreaker(ctx)
	report(t, "down: breaker open after %d more failed calls; health connected=%v outcome=%s", len(opening), rig.health().Connected, rig.health().Outcome)

	// Restarted on the same port after the outage.
	listened := srv.start()
	hold := rig.retryAfter()
	at, failed, shorts, last := rig.untilSuccess(ctx, 20*time.Second)
	if at.IsZero() {
		t.Fatalf("no successful call within 20s of the restart (last %v, health %+v)", last, rig.health())
	}
	first := at.Sub(listened)
	report(t, "restarted after the outage: first success %v after listening, hold left %v, %d failed probes, %d short-circuits; breaker %v",
		first.Round(time.Millisecond), hold.Round(time.Millisecond), failed, shorts, rig.state())
	if first > hold+time.Second {
		t.Errorf("first success %v after the server listened, with %v of hold left: want <= hold + 1s", first, hold)
	}
	if failed > 0 {
		t.Errorf("%d probes failed against the restarted server: want the first to close the breaker", failed)
	}
	if rig.state() != registry.StateClosed {
		t.Errorf("breaker %v after a successful probe, want closed", rig.state())
	}
}

// TestHTTPKilledIdleRestartedAfterOutage: the server dies between calls
// (no call in flight: the guard's session outlives it), the agent's calls
// are refused until the breaker opens, and the server restarts on the same
// port with hold left: the first successful call comes no later than that
// hold plus 1s, on the first probe.
func TestHTTPKilledIdleRestartedAfterOutage(t *testing.T) {
	srv := newHTTPServer(t)
	srv.start()
	rig := newAgentRig(t, 2*time.Second, restartOpenFor, mcpguard.StreamableHTTP(srv.url(), nil))
	ctx := t.Context()
	if err := rig.guard.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if r := rig.callTool(ctx, "echo", echo("hello")); !r.ok {
		t.Fatalf("first call: %v", r)
	}
	srv.kill()
	opening := rig.openBreaker(ctx)
	h := rig.health()
	report(t, "down: breaker open after %d refused calls; health connected=%v outcome=%s", len(opening), h.Connected, h.Outcome)
	listened := srv.start()
	hold := rig.retryAfter()
	at, failed, shorts, last := rig.untilSuccess(ctx, 30*time.Second)
	if at.IsZero() {
		t.Fatalf("no successful call within 30s of the restart (last %v, health %+v)", last, rig.health())
	}
	first := at.Sub(listened)
	report(t, "restarted after the outage: first success %v after listening, hold left %v, %d failed probes, %d short-circuits; breaker %v",
		first.Round(time.Millisecond), hold.Round(time.Millisecond), failed, shorts, rig.state())
	if first > hold+time.Second {
		t.Errorf("first success %v after the server listened, with %v of hold left: want <= hold + 1s", first, hold)
	}
	if failed > 0 {
		t.Errorf("%d probes failed against the restarted server: want the first to close the breaker", failed)
	}
}

// TestHTTPRestartedIdle: the server restarts on the same port while no call
// was made; the first call after it succeeds.
func TestHTTPRestartedIdle(t *testing.T) {
	srv := newHTTPServer(t)
	srv.start()
	rig := newAgentRig(t, 2*time.Second, openFor, mcpguard.StreamableHTTP(srv.url(), nil))
	ctx := t.Context()
	if err := rig.guard.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if r := rig.callTool(ctx, "echo", echo("hello")); !r.ok {
		t.Fatalf("first call: %v", r)
	}
	srv.kill()
	srv.start()
	r := rig.callTool(ctx, "echo", echo("after restart"))
	report(t, "restarted idle: first call ok=%v after %v; breaker %v", r.ok, r.took.Round(time.Millisecond), rig.state())
	if !r.ok {
		t.Errorf("first call after an idle restart failed: %v (health %+v)", r, rig.health())
	}
}

// TestHTTPFrozen: a frozen (SIGSTOP) server costs each call its CallTimeout
// at most; the breaker opens; after SIGCONT one probe closes it.
func TestHTTPFrozen(t *testing.T) {
	srv := newHTTPServer(t)
	srv.start()
	rig := newAgentRig(t, 2*time.Second, openFor, mcpguard.StreamableHTTP(srv.url(), nil))
	ctx := t.Context()
	if err := rig.guard.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if r := rig.callTool(ctx, "echo", echo("hello")); !r.ok {
		t.Fatalf("first call: %v", r)
	}
	srv.signal(syscall.SIGSTOP)
	opening := rig.openBreaker(ctx)
	var longest time.Duration
	for _, r := range opening {
		longest = max(longest, r.took)
	}
	if longest > rig.budget+time.Second {
		t.Errorf("a call to the frozen server took %v, want within the budget %v", longest, rig.budget)
	}
	srv.signal(syscall.SIGCONT)
	hold := rig.retryAfter()
	thawed := time.Now()
	at, failed, shorts, last := rig.untilSuccess(ctx, 20*time.Second)
	if at.IsZero() {
		t.Fatalf("no successful call within 20s of SIGCONT (last %v)", last)
	}
	report(t, "frozen: breaker open after %d calls (longest %v); after SIGCONT first success %v later, hold left %v, %d failed probes, %d short-circuits; breaker %v",
		len(opening), longest.Round(time.Millisecond), at.Sub(thawed).Round(time.Millisecond), hold.Round(time.Millisecond), failed, shorts, rig.state())
	if failed > 0 {
		t.Errorf("%d probes failed after SIGCONT, want the first to close the breaker", failed)
	}
	if rig.state() != registry.StateClosed {
		t.Errorf("breaker %v after a successful probe, want closed", rig.state())
	}
}

// TestStdioKilledInFlight: a stdio server killed during a call fails that
// call within the budget; the next call starts a new process and succeeds.
func TestStdioKilledInFlight(t *testing.T) {
	node, js := parts(t)
	w := newCallWatch()
	var mu sync.Mutex
	var procs []*exec.Cmd
	dial := func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(node, js) // stdio
		cmd.Stderr = io.Discard
		mu.Lock()
		procs = append(procs, cmd)
		mu.Unlock()
		return watchConnTransport{&mcp.CommandTransport{Command: cmd, TerminateDuration: 500 * time.Millisecond}, w}, nil
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range procs {
			if c.Process != nil {
				_ = c.Process.Kill()
			}
		}
	})
	rig := newAgentRig(t, 10*time.Second, openFor, dial)
	ctx := t.Context()
	if err := rig.guard.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if r := rig.callTool(ctx, "echo", echo("hello")); !r.ok {
		t.Fatalf("first call: %v", r)
	}
	done := make(chan result, 1)
	go func() {
		done <- rig.callTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 10, "steps": 10})
	}()
	for name := range w.calls {
		if name == "trigger-long-running-operation" {
			break
		}
	}
	mu.Lock()
	victim := procs[len(procs)-1]
	mu.Unlock()
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := <-done
	if killed.ok || killed.took > rig.budget+time.Second {
		t.Errorf("call in flight at the kill: %v; want a failure within the budget %v", killed, rig.budget)
	}
	next := rig.callTool(ctx, "echo", echo("again"))
	mu.Lock()
	n := len(procs)
	mu.Unlock()
	report(t, "stdio killed in flight: the call failed after %v; next call ok=%v after %v; %d processes started; breaker %v",
		killed.took.Round(time.Millisecond), next.ok, next.took.Round(time.Millisecond), n, rig.state())
	if !next.ok {
		t.Errorf("the call after the kill: %v", next)
	}
	if n < 2 {
		t.Errorf("%d processes started, want a new one after the kill", n)
	}
}
