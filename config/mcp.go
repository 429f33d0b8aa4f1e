package config

import (
	"github.com/adkbreaker/adkbreaker/degrade"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// MCPServer is one MCP server, guarded by package mcpguard
// (mcpguard.FromConfig builds the toolset). The fields mirror
// mcpguard.Server; a zero field means mcpguard's default.
//
// The file holds no secret: header values are read from the environment
// variables HeaderEnv names, when the toolset is built.
type MCPServer struct {
	// URL is the server's streamable HTTP endpoint (http or https, without
	// credentials). Required.
	URL string `json:"url" yaml:"url"`
	// HeaderEnv maps an HTTP header sent with every request to the name of
	// the environment variable that holds its value
	// (Authorization: NOTES_MCP_AUTHORIZATION).
	HeaderEnv map[string]string `json:"header_env,omitempty" yaml:"header_env,omitempty"`
	// Required: the agent is not assembled without it; otherwise its
	// absence is a missing capability, told to the model.
	Required bool `json:"required,omitempty" yaml:"required,omitempty"`
	// Capability is what the model is told is missing (default: the name).
	Capability string `json:"capability,omitempty" yaml:"capability,omitempty"`

	ConnectTimeout   Duration `json:"connect_timeout,omitempty" yaml:"connect_timeout,omitempty"`
	DiscoveryTimeout Duration `json:"discovery_timeout,omitempty" yaml:"discovery_timeout,omitempty"`
	CallTimeout      Duration `json:"call_timeout,omitempty" yaml:"call_timeout,omitempty"`
	OperationBudget  Duration `json:"operation_budget,omitempty" yaml:"operation_budget,omitempty"`
	MinLeg           Duration `json:"min_leg,omitempty" yaml:"min_leg,omitempty"`
	Retry            MCPRetry `json:"retry,omitempty" yaml:"retry,omitempty"`

	// Tools allowlists tools by their name on the server (default: all).
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	// IdempotentTools are the tools safe to call twice: only they are
	// retried after a call that may have reached the server.
	IdempotentTools []string `json:"idempotent_tools,omitempty" yaml:"idempotent_tools,omitempty"`
	Trusted         bool     `json:"trusted,omitempty" yaml:"trusted,omitempty"`
	ToolPrefix      string   `json:"tool_prefix,omitempty" yaml:"tool_prefix,omitempty"`
	MaxTools        int      `json:"max_tools,omitempty" yaml:"max_tools,omitempty"`
	MaxPages        int      `json:"max_pages,omitempty" yaml:"max_pages,omitempty"`
	ToolsTTL        Duration `json:"tools_ttl,omitempty" yaml:"tools_ttl,omitempty"`
	NoLastGood      bool     `json:"no_last_good,omitempty" yaml:"no_last_good,omitempty"`
	MaxResultBytes  int      `json:"max_result_bytes,omitempty" yaml:"max_result_bytes,omitempty"`
	ToolErrorDetail bool     `json:"tool_error_detail,omitempty" yaml:"tool_error_detail,omitempty"`

	// Policy is the server's breaker policy; it overrides defaults.policy
	// field by field, as a dependency's does.
	Policy *Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
}

// MCPRetry mirrors mcpguard.Retry.
type MCPRetry struct {
	MaxAttempts   int      `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	Base          Duration `json:"base,omitempty" yaml:"base,omitempty"`
	Cap           Duration `json:"cap,omitempty" yaml:"cap,omitempty"`
	BudgetRatio   float64  `json:"budget_ratio,omitempty" yaml:"budget_ratio,omitempty"`
	NoBudgetRatio bool     `json:"no_budget_ratio,omitempty" yaml:"no_budget_ratio,omitempty"`
	BudgetMin     int      `json:"budget_min,omitempty" yaml:"budget_min,omitempty"`
	BudgetWindow  Duration `json:"budget_window,omitempty" yaml:"budget_window,omitempty"`
}

// reservedHeaders are set by the MCP transport itself.
var reservedHeaders = []string{"accept", "content-type", "content-length", "host", "last-event-id", "mcp-protocol-version", "mcp-session-id"}

// validateMCP checks what the file alone can tell. Rules that depend on
// mcpguard's defaults (legs ≥ min_leg, retry.cap ≥ retry.base, the
// operation budget within the breaker's probe lease) are checked by
// mcpguard.FromConfig, which reports them by the same paths.
func (c *File) validateMCP(defaultsValid bool) problems {
	var ps problems
	names := slices.Sorted(maps.Keys(c.MCPServers))
	for _, name := range names {
		s := c.MCPServers[name]
		p := "mcp_servers." + depSeg(name)
		if err := degrade.CheckName(name); err != nil {
			// The server name is its dependency key, shown to the model.
			ps.add(p, "invalid server name: %v", err)
		} else if !validName(name) {
			ps.add(p, "invalid server name %s: use 1–128 bytes of printable text without spaces", quoteShort(name, 40))
		}
		ps = append(ps, validateMCPURL(p+".url", s.URL)...)
		seen := map[string]string{}
		for _, h := range slices.Sorted(maps.Keys(s.HeaderEnv)) {
			hp := p + ".header_env." + seg(h)
			switch lh := strings.ToLower(h); {
			case !validHeaderName(h):
				ps.add(hp, "invalid HTTP header name %s", quoteShort(h, 40))
			case slices.Contains(reservedHeaders, lh):
				ps.add(hp, "%s is set by the MCP transport; it cannot be configured", h)
			case seen[lh] != "":
				ps.add(hp, "header %s is also configured as %s (header names are case-insensitive)", h, seen[lh])
			default:
				seen[lh] = h
			}
			if v := s.HeaderEnv[h]; !envName(v) {
				// Never echo it: it may be the secret itself.
				ps.add(hp, "want the name of an environment variable (like NOTES_MCP_TOKEN) that holds the value, not the value; got a %d-byte value that is not a variable name", len(v))
			}
		}
		nonNegative(&ps, p, reflect.ValueOf(s))
		if r := s.Retry.BudgetRatio; r < 0 || r > 1 {
			ps.add(p+".retry.budget_ratio", "must be in [0, 1], got %v", r)
		} else if r != 0 && s.Retry.NoBudgetRatio {
			ps.add(p+".retry.budget_ratio", "must be 0 with retry.no_budget_ratio, got %v", r)
		}
		listed := map[string]bool{}
		for i, t := range s.Tools {
			if !validMCPToolName(t) {
				ps.add(index(p+".tools", i), "invalid tool name %s (1–128 of A-Z a-z 0-9 _ . -)", quoteShort(t, 40))
			}
			listed[t] = true
		}
		for i, t := range s.IdempotentTools {
			switch {
			case !validMCPToolName(t):
				ps.add(index(p+".idempotent_tools", i), "invalid tool name %s (1–128 of A-Z a-z 0-9 _ . -)", quoteShort(t, 40))
			case len(s.Tools) > 0 && !listed[t]:
				ps.add(index(p+".idempotent_tools", i), "%q is not in tools", t)
			}
		}
		if s.ToolPrefix != "" && !validMCPToolName(s.ToolPrefix) {
			ps.add(p+".tool_prefix", "invalid prefix %s (A-Z a-z 0-9 _ . -)", quoteShort(s.ToolPrefix, 40))
		}
		if s.Policy != nil {
			if d, ok := c.Dependencies[name]; ok && d.Policy != nil {
				ps.add(p+".policy", "dependencies.%s also sets a policy for this breaker; set it in one place", seg(name))
			} else {
				ps = append(ps, c.dependencyPolicyProblems(name, p+".policy", defaultsValid)...)
			}
		}
	}
	if n := c.breakerCount(); len(c.MCPServers) > 0 && n > len(c.Dependencies) {
		limit := c.Defaults.MaxBreakers
		if limit == 0 {
			limit = registry.DefaultMaxBreakers
		}
		if n > limit && len(c.Dependencies) <= limit {
			ps.add("defaults.max_breakers", "the dependencies and MCP servers need %d breakers, more than the cap of %d", n, limit)
		}
	}
	return ps
}

// breakerCount is the number of distinct breaker keys the file names.
func (c *File) breakerCount() int {
	n := len(c.Dependencies)
	for name := range c.MCPServers {
		if _, ok := c.Dependencies[name]; !ok {
			n++
		}
	}
	return n
}

// validateMCPURL checks a server URL without repeating it in messages (it
// may carry a token).
func validateMCPURL(path, raw string) []Problem {
	var ps problems
	u, err := url.Parse(raw)
	switch {
	case strings.TrimSpace(raw) == "":
		ps.add(path, "required: the server's streamable HTTP endpoint")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		ps.add(path, "want an http(s) URL with a host")
	case u.User != nil:
		ps.add(path, "must not hold credentials; send them in a header whose value header_env reads from the environment")
	case redact.Sensitive(u.RawQuery) || redact.Sensitive(u.EscapedPath()) || redact.Sensitive(u.Host) || redact.Sensitive(u.Fragment):
		// As base_url (baseURLProblem): net/http's errors quote the URL, and
		// url.Error masks only a password.
		ps.add(path, "looks like it holds a credential (not shown); send it in a header whose value header_env reads from the environment")
	}
	return ps
}

// validHeaderName accepts an RFC 9110 token.
func validHeaderName(s string) bool {
	return bytesIn(s, func(c byte) bool { return isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 })
}

// validMCPToolName accepts MCP tool names: 1-128 of [A-Za-z0-9_.-].
func validMCPToolName(s string) bool {
	return bytesIn(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' })
}

// bytesIn reports whether s holds 1–128 bytes, each accepted by ok.
func bytesIn(s string, ok func(byte) bool) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ownPolicy is the policy the file sets for a breaker key: a dependency's or
// an MCP server's (never both: that is a validation problem), or nil.
func (c *File) ownPolicy(name string) *Policy {
	if d, ok := c.Dependencies[name]; ok && d.Policy != nil {
		return d.Policy
	}
	if s, ok := c.MCPServers[name]; ok {
		return s.Policy
	}
	return nil
}

// nonNegative reports every negative integer or duration of the struct v
// (and of its struct fields), by field path: no number of an MCP server may
// be negative.
func nonNegative(ps *problems, path string, v reflect.Value) {
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		fp := join(path, name)
		switch f := v.Field(i); {
		case f.Type() == durationType && f.Int() < 0:
			ps.add(fp, "must be ≥ 0, got %s", time.Duration(f.Int()))
		case f.Kind() == reflect.Int && f.Int() < 0:
			ps.add(fp, "must be ≥ 0, got %d", f.Int())
		case f.Kind() == reflect.Struct && f.Type() != durationType:
			nonNegative(ps, fp, f)
		}
	}
}
