package mcpguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// authServer serves a go-sdk MCP server with an "echo" tool over streamable
// HTTP on 127.0.0.1, answering 401 to requests without the Authorization
// header want.
func authServer(t *testing.T, want string) (url string, unauthorized *atomic.Int64) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A careless server that echoes the credential in an error.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no user for " + req.Extra.Header.Get("Authorization")}
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	unauthorized = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", unauthorized
}

func writeConfig(t *testing.T, body string) *config.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adkbreaker.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const notesConfig = `version: 1
defaults:
  policy: {consecutive_failures: 3, open_for: 30s, no_jitter: true, probe_lease: 2m}
mcp_servers:
  notes:
    url: %s
    header_env: {Authorization: NOTES_MCP_AUTHORIZATION}
    required: true
    connect_timeout: 2s
    call_timeout: 5s
    operation_budget: 10s
    retry: {max_attempts: 1}
    idempotent_tools: [echo]
    tool_prefix: notes_
    policy: {consecutive_failures: 2}
`

// TestFromConfigLoopback: a loaded file drives a real toolset against a
// loopback server through the runner: the header is read from the
// environment and sent, the tool is prefixed, the breaker is the file's.
// With a wrong credential the failure names the server, never the value,
// in the error, the log and the spans.
func TestFromConfigLoopback(t *testing.T) {
	const secret = "Bearer s3cr3t-token-0123456789"
	url, unauthorized := authServer(t, secret)
	f := writeConfig(t, fmt.Sprintf(notesConfig, url))
	reg, err := registry.New(f.RegistryOptions()...)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("authorized", func(t *testing.T) {
		t.Setenv("NOTES_MCP_AUTHORIZATION", secret)
		g, err := mcpguard.FromConfig(reg, f)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		out := runTurn(t, t.Context(), reg, g, &scriptedLLM{Call: "notes_echo", Args: map[string]any{"text": "hi"}})
		if out.err != nil || !strings.Contains(fmt.Sprint(out.fnResp[mcpguard.KeyOutput]), `"text":"hi"`) {
			t.Fatalf("turn: err=%v response=%v", out.err, out.fnResp)
		}
		if got := reg.PolicyFor("notes").ConsecutiveFailures; got != 2 {
			t.Errorf("breaker policy consecutive_failures = %d, want the file's 2", got)
		}
		if h := g.Health()[0]; h.Server != "notes" || !h.Required || h.Outcome != mcpguard.ClassOK {
			t.Errorf("health = %+v", h)
		}
		if n := unauthorized.Load(); n != 0 {
			t.Errorf("%d requests without the header", n)
		}
	})

	t.Run("echoed credential", func(t *testing.T) {
		// The value has no "Bearer" for redact.Text to recognise: only
		// FromConfig's knowledge of it keeps it out of logs and spans.
		const raw = "s3cr3t-raw-0123456789"
		url, _ := authServer(t, raw)
		f := writeConfig(t, fmt.Sprintf(notesConfig, url))
		reg := registry.MustNew(f.RegistryOptions()...)
		t.Setenv("NOTES_MCP_AUTHORIZATION", raw)
		ctx, rec, g, logs := tracedGuard(t, reg, f)
		out := runTurn(t, ctx, reg, g, &scriptedLLM{Call: "notes_whoami", Args: map[string]any{}})
		if out.err != nil {
			t.Fatal(out.err)
		}
		all := strings.Join([]string{logs.String(), fmt.Sprint(out.fnResp), spanText(rec, "")}, "\n")
		if !strings.Contains(all, "no user for [redacted]") {
			t.Errorf("the server's error is not in the log and spans, scrubbed:\n%s", all)
		}
		if strings.Contains(all, raw) {
			t.Errorf("the credential leaked:\n%s", all)
		}
	})

	t.Run("wrong credential", func(t *testing.T) {
		const wrong = "Bearer wr0ng-token-9876543210"
		t.Setenv("NOTES_MCP_AUTHORIZATION", wrong)
		ctx, rec, g, logs := tracedGuard(t, reg, f)
		err := g.Start(ctx)
		var me *mcpguard.Error
		if !errors.As(err, &me) || me.Server != "notes" {
			t.Fatalf("Start = %v, want the server's *Error", err)
		}
		all := strings.Join([]string{err.Error(), fmt.Sprintf("%+v", err), logs.String(), spanText(rec, "")}, "\n")
		if !strings.Contains(all, "notes") || len(rec.Ended()) == 0 || logs.String() == "" {
			t.Fatalf("expected an error, a log line and spans naming the server; got:\n%s", all)
		}
		for _, v := range []string{"wr0ng-token", "s3cr3t-token"} {
			if strings.Contains(all, v) {
				t.Errorf("the credential %q leaked:\n%s", v, all)
			}
		}
	})
}

// tracedGuard builds the file's guard with a log buffer, and a traced
// context whose spans rec records.
func tracedGuard(t *testing.T, reg *registry.Registry, f *config.File) (context.Context, *tracetest.SpanRecorder, *mcpguard.Guard, *logBuf) {
	t.Helper()
	ctx, rec := tracedContext(t)
	logs := &logBuf{}
	g, err := mcpguard.FromConfig(reg, f, mcpguard.WithLogger(newLogger(logs)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return ctx, rec, g, logs
}

// TestFromConfigProblems: what the file cannot check alone is checked when
// the toolset is built, by the file's paths, every problem at once, and
// without showing a header value.
func TestFromConfigProblems(t *testing.T) {
	t.Setenv("NOTES_MCP_AUTHORIZATION", "")
	t.Setenv("BAD_VALUE", "Bearer x\r\nX-Injected: 1")
	f := writeConfig(t, `version: 1
mcp_servers:
  notes:
    url: https://notes.internal/mcp
    header_env: {Authorization: NOTES_MCP_AUTHORIZATION, X-Other: BAD_VALUE}
    call_timeout: 10ms
    retry: {base: 2s, cap: 1s}
    max_tools: 5000
`)
	_, err := mcpguard.FromConfig(registry.MustNew(f.RegistryOptions()...), f)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *config.Error", err)
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		got[p.Path] = p.Message
	}
	want := map[string]string{
		"mcp_servers.notes.header_env.Authorization": "environment variable NOTES_MCP_AUTHORIZATION is unset or empty",
		"mcp_servers.notes.header_env.X-Other":       "environment variable BAD_VALUE does not hold a valid header value (control characters)",
		"mcp_servers.notes.call_timeout":             "must be ≥ min_leg (50ms), got 10ms",
		"mcp_servers.notes.retry.cap":                "must be ≥ retry.base (2s), got 1s",
		"mcp_servers.notes.max_tools":                "must be ≤ 4096, got 5000",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%v\nwant\n%v", got, want)
	}
	if strings.Contains(err.Error(), "Injected") {
		t.Errorf("the error shows a header value: %v", err)
	}

	// A registry not built from the file.
	f = writeConfig(t, `version: 1
mcp_servers:
  notes: {url: "https://notes.internal/mcp", policy: {consecutive_failures: 2}}
`)
	_, err = mcpguard.FromConfig(registry.MustNew(), f)
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Path != "mcp_servers.notes.policy" {
		t.Errorf("err = %v, want the policy mismatch", err)
	}
}

// TestServersFromConfigFields: every field of the full fixture reaches the
// mcpguard.Server.
func TestServersFromConfigFields(t *testing.T) {
	t.Setenv("NOTES_MCP_AUTHORIZATION", "Bearer x")
	t.Setenv("NOTES_TENANT", "acme")
	f, err := config.Load("../../config/testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	servers, err := mcpguard.ServersFromConfig(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || servers[0].Dial == nil {
		t.Fatalf("servers = %+v", servers)
	}
	got := servers[0]
	got.Dial = nil
	want := mcpguard.Server{
		Name: "notes", Capability: "team notes", Required: true,
		ConnectTimeout: 5 * time.Second, DiscoveryTimeout: 10 * time.Second, CallTimeout: 20 * time.Second,
		OperationBudget: 40 * time.Second, MinLeg: 50 * time.Millisecond,
		Retry: mcpguard.Retry{MaxAttempts: 3, Base: 100 * time.Millisecond, Cap: 2 * time.Second, BudgetRatio: 0.2,
			BudgetMin: 3, BudgetWindow: 10 * time.Second},
		Tools: []string{"search", "get", "append"}, IdempotentTools: []string{"search", "get"}, Trusted: true,
		ToolPrefix: "notes_", MaxTools: 64, MaxPages: 20, ToolsTTL: 10 * time.Minute, NoLastGood: true,
		MaxResultBytes: 131072, ToolErrorDetail: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("server =\n%+v\nwant\n%+v", got, want)
	}
	// Every field of config.MCPServer is used: a new one must be mapped.
	if n := reflect.TypeFor[config.MCPServer]().NumField(); n != 21 {
		t.Errorf("config.MCPServer has %d fields; map the new ones in ServersFromConfig and update this test", n)
	}
}
