package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

const mcpYAML = `version: 1
defaults:
  policy: {open_for: 30s, probe_lease: 2m}
mcp_servers:
  notes:
    url: https://notes.internal/mcp
    header_env: {Authorization: NOTES_MCP_AUTHORIZATION}
    required: true
    connect_timeout: 5s
    call_timeout: 20
    operation_budget: 40s
    retry: {max_attempts: 2, base: 50ms, cap: 1s, no_budget_ratio: true, budget_min: 5}
    tools: [search, get]
    idempotent_tools: [search]
    tool_prefix: notes_
    policy: {consecutive_failures: 3}
  weather:
    url: http://127.0.0.1:8080/mcp
    capability: weather forecasts
`

const mcpJSON = `{"version": 1,
 "defaults": {"policy": {"open_for": "30s", "probe_lease": 120}},
 "mcp_servers": {
  "notes": {"url": "https://notes.internal/mcp", "header_env": {"Authorization": "NOTES_MCP_AUTHORIZATION"},
   "required": true, "connect_timeout": "5s", "call_timeout": 20, "operation_budget": "40s",
   "retry": {"max_attempts": 2, "base": "50ms", "cap": "1s", "no_budget_ratio": true, "budget_min": 5},
   "tools": ["search", "get"], "idempotent_tools": ["search"], "tool_prefix": "notes_",
   "policy": {"consecutive_failures": 3}},
  "weather": {"url": "http://127.0.0.1:8080/mcp", "capability": "weather forecasts"}}}`

// TestMCPServers: the mcp_servers section in YAML and JSON, and the
// servers' breaker policies in RegistryOptions.
func TestMCPServers(t *testing.T) {
	y, j := mustParse(t, mcpYAML, config.YAML), mustParse(t, mcpJSON, config.JSON)
	if !reflect.DeepEqual(y, j) {
		t.Fatalf("YAML and JSON differ:\n%+v\n%+v", y.MCPServers, j.MCPServers)
	}
	n := y.MCPServers["notes"]
	if n.URL != "https://notes.internal/mcp" || n.HeaderEnv["Authorization"] != "NOTES_MCP_AUTHORIZATION" || !n.Required ||
		time.Duration(n.CallTimeout) != 20*time.Second || n.Retry.MaxAttempts != 2 || time.Duration(n.Retry.Base) != 50*time.Millisecond ||
		!n.Retry.NoBudgetRatio || n.ToolPrefix != "notes_" || len(n.IdempotentTools) != 1 {
		t.Errorf("notes = %+v", n)
	}
	reg, err := registry.New(y.RegistryOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	want := registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, ProbeLease: 2 * time.Minute}.WithDefaults()
	if got := reg.PolicyFor("notes"); got != want {
		t.Errorf("notes policy = %+v, want %+v", got, want)
	}
	if got, want := reg.PolicyFor("weather"), y.PolicyFor("weather").WithDefaults(); got != want {
		t.Errorf("weather policy = %+v, want the defaults %+v", got, want)
	}
}

// TestMCPStrictDecoding: every problem of the section at once, by field path
// and line, with suggestions; values that may be secrets are never echoed.
func TestMCPStrictDecoding(t *testing.T) {
	src := `version: 1
dependencies:
  both: {policy: {open_for: 1m}}
mcp_servers:
  notes:
    url: https://admin:hunter2@notes.internal/mcp
    header_env:
      Authorization: "Bearer sk-live-ABCDEF0123456789"
      Mcp-Session-Id: SESSION
    idempotent_tool: [search]
    call_timeout: soon
    retry: {max_attempts: -1, budget_ratio: 2}
    tools: [search]
    idempotent_tools: [get]
  both:
    url: ftp://both.internal
    policy: {open_for: 2m}
  "bad name": {url: "https://x.internal/mcp"}
  empty: {}
`
	_, err := parse(t, src, config.YAML)
	ps := problems(t, err)
	for _, c := range []struct {
		path, msg string
		line      int
	}{
		{"mcp_servers.notes.idempotent_tool", `unknown field "idempotent_tool" (did you mean "idempotent_tools"?)`, 10},
		{"mcp_servers.notes.call_timeout", `want a duration like "30s" or "1m30s", or a number of seconds, got the string "soon"`, 11},
		{"mcp_servers.notes.url", "must not hold credentials; send them in a header whose value header_env reads from the environment", 6},
		{"mcp_servers.notes.header_env.Authorization", "want the name of an environment variable (like NOTES_MCP_TOKEN) that holds the value, not the value; got a 31-byte value that is not a variable name", 8},
		{"mcp_servers.notes.header_env.Mcp-Session-Id", "Mcp-Session-Id is set by the MCP transport; it cannot be configured", 9},
		{"mcp_servers.notes.retry.max_attempts", "must be ≥ 0, got -1", 12},
		{"mcp_servers.notes.retry.budget_ratio", "must be in [0, 1], got 2", 12},
		{"mcp_servers.notes.idempotent_tools[0]", `"get" is not in tools`, 14},
		{"mcp_servers.both.url", "want an http(s) URL with a host", 16},
		{"mcp_servers.both.policy", "dependencies.both also sets a policy for this breaker; set it in one place", 17},
		{`mcp_servers."bad name"`, `invalid server name "bad name": use 1–128 bytes of printable text without spaces`, 18},
		{"mcp_servers.empty.url", "required: the server's streamable HTTP endpoint", 19},
	} {
		p := find(t, ps, c.path)
		if !strings.HasPrefix(p.Message, c.msg) || p.Line != c.line {
			t.Errorf("%s: got %q (line %d), want %q (line %d)", c.path, p.Message, p.Line, c.msg, c.line)
		}
	}
	if len(ps) != 12 {
		t.Errorf("%d problems, want 12:\n%s", len(ps), list(ps))
	}
	for _, secret := range []string{"hunter2", "sk-live", "Bearer"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %q:\n%v", secret, err)
		}
	}

	// The same checks in JSON, with lines.
	_, err = parse(t, `{"version": 1,
 "mcp_servers": {"notes": {
  "url": "https://notes.internal/mcp",
  "header_env": {"Authorization": "Bearer sk-live-ABCDEF0123456789"},
  "retry": {"max_attemps": 2},
  "max_tools": "many"}}}`, config.JSON)
	ps = problems(t, err)
	if p := find(t, ps, "mcp_servers.notes.retry.max_attemps"); p.Line != 5 || !strings.Contains(p.Message, `did you mean "max_attempts"?`) {
		t.Errorf("got %v", p)
	}
	if p := find(t, ps, "mcp_servers.notes.max_tools"); p.Line != 6 || p.Message != `want an integer, got the string "many"` {
		t.Errorf("got %v", p)
	}
	if p := find(t, ps, "mcp_servers.notes.header_env.Authorization"); p.Line != 4 {
		t.Errorf("got %v", p)
	}
	if strings.Contains(err.Error(), "sk-live") {
		t.Errorf("the error shows the secret:\n%v", err)
	}
}

// TestMCPMaxBreakers: MCP servers need breakers too.
func TestMCPMaxBreakers(t *testing.T) {
	_, err := parse(t, `version: 1
defaults: {max_breakers: 2}
dependencies: {a: {}, b: {}}
mcp_servers: {b: {url: "https://b.internal/mcp"}, c: {url: "https://c.internal/mcp"}}
`, config.YAML)
	p := find(t, problems(t, err), "defaults.max_breakers")
	if p.Message != "the dependencies and MCP servers need 3 breakers, more than the cap of 2" || p.Line != 2 {
		t.Errorf("got %v", p)
	}
}

// TestMCPURLWithTokenInQuery: a server URL carrying a credential in its
// query (or path) is refused without being echoed, as one with user info is:
// the transport's errors quote the URL, and they reach the guard's logs.
func TestMCPURLWithTokenInQuery(t *testing.T) {
	for _, u := range []string{
		"https://notes.internal/mcp?api_key=SECRET0123456789",
		"https://notes.internal/mcp?token=SECRET0123456789",
	} {
		_, err := parse(t, "version: 1\nmcp_servers:\n  notes: {url: \""+u+"\"}\n", config.YAML)
		p := find(t, problems(t, err), "mcp_servers.notes.url")
		if !strings.HasPrefix(p.Message, "looks like it holds a credential") {
			t.Errorf("%s: got %q", u, p.Message)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	if _, err := parse(t, "version: 1\nmcp_servers:\n  notes: {url: \"https://notes.internal/mcp?region=eu\"}\n", config.YAML); err != nil {
		t.Errorf("a plain query is refused: %v", err)
	}
}

// TestMCPURLCredentialInQueryOrPath: a server URL carrying a key in its
// query, path or fragment is refused without being repeated, as a base_url
// is (net/http's errors quote the whole URL); a plain query stays allowed.
func TestMCPURLCredentialInQueryOrPath(t *testing.T) {
	for _, u := range []string{
		"https://notes.internal/mcp?api_key=sk-live-ABCDEF0123456789",
		"https://notes.internal/mcp?access_token=abc",
		"https://notes.internal/sk-live-ABCDEF0123456789/mcp",
		"https://notes.internal/mcp#token=hunter2hunter2",
	} {
		_, err := parse(t, "version: 1\nmcp_servers:\n  notes:\n    url: \""+u+"\"\n", config.YAML)
		p := find(t, problems(t, err), "mcp_servers.notes.url")
		if p.Line != 4 || !strings.Contains(p.Message, "looks like it holds a credential") {
			t.Errorf("%s: got %v", u, p)
		}
		for _, secret := range []string{"sk-live", "access_token", "hunter2"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows %q:\n%v", secret, err)
			}
		}
	}
	if _, err := parse(t, "version: 1\nmcp_servers:\n  notes:\n    url: \"https://notes.internal/mcp?tenant=acme\"\n", config.YAML); err != nil {
		t.Errorf("a plain query refused: %v", err)
	}
}
