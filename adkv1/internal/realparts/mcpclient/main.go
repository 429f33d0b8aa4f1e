// Command mcpclient is the client the MCP conformance suite
// (@modelcontextprotocol/conformance) drives in scripts/realparts/mcp-conformance.sh:
// a real ADK agent (runner, llmagent, a scripted model standing in for the
// model's reasoning) whose MCP tools come either from ADK's plain mcptoolset
// ("bare") or from mcpguard, set up as docs/mcp.md shows, with adkbreaker's
// plugin first on the runner ("guarded").
//
//	mcpclient -mode bare|guarded <server-url>
//
// The suite sets MCP_CONFORMANCE_SCENARIO (and, for some scenarios,
// MCP_CONFORMANCE_CONTEXT, JSON). The model calls the scenario's tool once
// (none for "initialize": the agent lists the tools and answers); the
// program exits 1 when the listing or the call failed. It logs one line
// "HEADERCHECK requests_after_init=N missing_protocol_version=M": the spec
// says every request after initialization MUST carry MCP-Protocol-Version,
// which the suite does not check.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/mcptoolset"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// scenario is what the agent does for one conformance scenario.
type scenario struct {
	tool   string         // the tool the model calls; "" lists tools only
	args   map[string]any // its arguments
	auth   bool           // the server wants OAuth
	elicit bool           // the client must answer elicitation requests
}

func scenarioFor(name string) (scenario, bool) {
	switch {
	case name == "initialize":
		return scenario{}, true
	case name == "tools_call":
		return scenario{tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}}, true
	case name == "elicitation-sep1034-client-defaults":
		return scenario{tool: "test_client_elicitation_defaults", args: map[string]any{}, elicit: true}, true
	case name == "sse-retry":
		return scenario{tool: "test_reconnection", args: map[string]any{}}, true
	case strings.HasPrefix(name, "auth/"):
		return scenario{tool: "test-tool", args: map[string]any{}, auth: true}, true
	}
	return scenario{}, false
}

func main() {
	mode := flag.String("mode", "bare", "bare (ADK's mcptoolset) or guarded (mcpguard and adkbreaker's plugin)")
	timeout := flag.Duration("timeout", 20*time.Second, "the run's deadline")
	flag.Parse()
	if flag.NArg() < 1 {
		log.Fatal("usage: mcpclient -mode bare|guarded <server-url>")
	}
	serverURL := flag.Arg(flag.NArg() - 1)
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarioFor(name)
	if !ok {
		log.Fatalf("unknown scenario %q", name)
	}
	var confCtx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		_ = json.Unmarshal([]byte(s), &confCtx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	hc := &headerCheck{}
	err := run(ctx, *mode, serverURL, sc, confCtx, &http.Client{Transport: hc})
	after, missing := hc.counts()
	// The spec's MUST that the suite does not check: every HTTP request
	// after initialization carries MCP-Protocol-Version.
	log.Printf("HEADERCHECK requests_after_init=%d missing_protocol_version=%d", after, missing)
	if err != nil {
		log.Fatalf("scenario %q (%s): %v", name, *mode, err)
	}
	log.Printf("scenario %q (%s): ok", name, *mode)
}

// headerCheck is the client's HTTP transport: it counts the requests sent
// after a handshake request (initialize, or server/discover of the
// sessionless protocol) was answered, and those of them without the
// MCP-Protocol-Version header.
type headerCheck struct {
	mu                    sync.Mutex
	initialized           bool
	afterInit, noProtocol int
}

func (h *headerCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	isInit := false
	if req.Method == http.MethodPost && req.Body != nil && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var m struct {
				Method string `json:"method"`
			}
			if json.NewDecoder(body).Decode(&m) == nil && (m.Method == "initialize" || m.Method == "server/discover") {
				isInit = true
			}
			body.Close()
		}
	}
	h.mu.Lock()
	if h.initialized && !isInit {
		h.afterInit++
		if req.Header.Get("MCP-Protocol-Version") == "" {
			h.noProtocol++
		}
	}
	h.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if isInit && err == nil && resp.StatusCode/100 == 2 {
		h.mu.Lock()
		h.initialized = true
		h.mu.Unlock()
	}
	return resp, err
}

func (h *headerCheck) counts() (after, missing int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.afterInit, h.noProtocol
}

func run(ctx context.Context, mode, serverURL string, sc scenario, confCtx map[string]any, hc *http.Client) error {
	var oauth auth.OAuthHandler
	if sc.auth {
		h, err := oauthHandler(confCtx)
		if err != nil {
			return err
		}
		oauth = h
	}
	var (
		ts      tool.Toolset
		plugins []*adkplugin.Plugin
	)
	switch mode {
	case "bare":
		var opts *mcp.ClientOptions
		if sc.elicit {
			opts = &mcp.ClientOptions{ElicitationHandler: acceptDefaults}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "adk-bare", Version: "v1"}, opts)
		set, err := mcptoolset.New(mcptoolset.Config{Client: client,
			Transport: &mcp.StreamableClientTransport{Endpoint: serverURL, HTTPClient: hc, OAuthHandler: oauth}})
		if err != nil {
			return err
		}
		ts = set
	case "guarded":
		// As docs/mcp.md shows; the Dial is mcpguard.StreamableHTTP's, with
		// the OAuth handler the auth scenarios need (StreamableHTTP takes
		// none), and the same client handlers as the bare client.
		var opts *mcp.ClientOptions
		if sc.elicit {
			opts = &mcp.ClientOptions{ElicitationHandler: acceptDefaults}
		}
		servers := []mcpguard.Server{{Name: "conformance", Required: true, Client: opts, Dial: func(context.Context) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: serverURL, HTTPClient: mcpguard.HTTPClient(hc), OAuthHandler: oauth}, nil
		}}}
		reg := registry.MustNew(mcpguard.RegistryOptions(servers...)...)
		g, err := mcpguard.New(reg, servers)
		if err != nil {
			return err
		}
		defer g.Close()
		if err := g.Start(ctx); err != nil {
			return fmt.Errorf("guard start: %w", err)
		}
		ts = g.Toolset()
		p, err := breaker.New(breaker.WithRegistry(reg))
		if err != nil {
			return err
		}
		plugins = []*adkplugin.Plugin{p}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}

	var offered []string
	llm := scripted.New("conformance", func(req *model.LLMRequest) *model.LLMResponse {
		if offered == nil {
			offered = []string{}
			for n := range req.Tools {
				offered = append(offered, n)
			}
		}
		if sc.tool == "" || len(scripted.LastResponses(req)) > 0 {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: sc.tool, Args: sc.args})
	})
	a, err := llmagent.New(llmagent.Config{Name: "conformance", Model: llm, Toolsets: []tool.Toolset{ts}})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: "conformance", Agent: a, SessionService: session.InMemoryService(),
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		return err
	}
	var resp map[string]any
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == sc.tool {
				resp = fr.Response
			}
		}
	}
	if offered == nil {
		return fmt.Errorf("the model was never called")
	}
	if sc.tool == "" {
		if len(offered) == 0 {
			return fmt.Errorf("no tools listed")
		}
		return nil
	}
	if resp == nil {
		return fmt.Errorf("no response to %s (tools offered: %v)", sc.tool, offered)
	}
	if _, ok := resp["output"]; !ok {
		b, _ := json.Marshal(resp)
		return fmt.Errorf("%s failed: %.400s", sc.tool, b)
	}
	return nil
}

// acceptDefaults accepts an elicitation with no content: the server's
// defaults apply (SEP-1034).
func acceptDefaults(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}

// fetchCode follows the conformance authorization server's immediate
// redirect to the callback and reads the code and state from it.
func fetchCode(ctx context.Context, authURL string) (code, state, iss string, err error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", "", "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", "", "", err
	}
	defer resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return "", "", "", fmt.Errorf("parse location: %v", err)
	}
	q := loc.Query()
	return q.Get("code"), q.Get("state"), q.Get("iss"), nil
}
