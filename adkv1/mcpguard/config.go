package mcpguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// FromConfig builds a Guard for the MCP servers of a configuration file
// (its mcp_servers section), each over streamable HTTP (StreamableHTTP).
// reg holds the servers' breakers: build it with f.RegistryOptions(), which
// installs their policies, and share it with the adkbreaker plugin.
//
//	f, err := config.Load("adkbreaker.yaml")
//	reg, err := registry.New(f.RegistryOptions()...)
//	g, err := mcpguard.FromConfig(reg, f)
//	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithConfig(f))
//
// Header values are read from the environment variables the file names,
// now; an unset or empty variable is an error. Values never appear in
// errors, and the guard removes them from its log lines and spans should a
// server echo one back in an error. Every problem is reported at once, as
// a *config.Error whose paths name the file's fields.
func FromConfig(reg *registry.Registry, f *config.File, opts ...Option) (*Guard, error) {
	servers, secrets, err := serversFromConfig(f, nil)
	if err != nil {
		return nil, err
	}
	if reg != nil {
		var ps []config.Problem
		for _, s := range servers {
			if want := f.PolicyFor(s.Name).WithDefaults(); reg.PolicyFor(registry.Key(s.Name)) != want {
				ps = append(ps, config.Problem{Path: "mcp_servers." + pathSeg(s.Name) + ".policy",
					Message: "the registry does not hold this server's policy; build it with registry.New(f.RegistryOptions()...)"})
			}
		}
		if len(ps) > 0 {
			return nil, fmt.Errorf("mcpguard: %w", &config.Error{Problems: ps})
		}
	}
	g, err := New(reg, servers, opts...)
	if err != nil {
		return nil, err
	}
	g.scrubSecrets(secrets)
	return g, nil
}

// scrubSecrets removes the servers' header values from the guard's log
// lines and spans, should a server echo a credential in an error.
func (g *Guard) scrubSecrets(byServer map[string][]string) {
	var all []string
	for _, s := range g.servers {
		s.secrets = byServer[s.cfg.Name]
		if s.tel != nil {
			s.tel.secrets = s.secrets
		}
		all = append(all, byServer[s.cfg.Name]...)
	}
	if len(all) > 0 {
		g.log = slog.New(&scrubHandler{inner: g.log.Handler(), secrets: all})
	}
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// scrubHandler removes secrets from every string a log record carries.
type scrubHandler struct {
	inner   slog.Handler
	secrets []string
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, scrub(r.Message, h.secrets), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, scrub(v.String(), h.secrets))
	case slog.KindAny:
		if s := fmt.Sprint(v.Any()); scrub(s, h.secrets) != s {
			return slog.String(a.Key, scrub(s, h.secrets))
		}
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, x := range as {
			out[i] = h.attr(x)
		}
		return slog.Group(a.Key, out...)
	}
	return a
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return &scrubHandler{inner: h.inner.WithAttrs(out), secrets: h.secrets}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

// ServersFromConfig returns the Servers of a configuration file's
// mcp_servers section, in name order, each dialling its URL over streamable
// HTTP with client (nil: http.DefaultClient) and sending the configured
// headers, read from the environment now. Breaker is left nil: the policy
// is the registry's (f.RegistryOptions installs the file's).
//
// Besides the file's own validation, every server is held to
// Server.Validate (rules that depend on mcpguard's defaults, such as legs
// of at least min_leg); all problems are returned at once as a
// *config.Error. Header values never appear in it. (Unlike FromConfig, a
// Guard built from these servers with New does not know the values, so it
// cannot remove them from text a server echoes.)
func ServersFromConfig(f *config.File, client *http.Client) ([]Server, error) {
	servers, _, err := serversFromConfig(f, client)
	return servers, err
}

// serversFromConfig is ServersFromConfig that also returns the header
// values it read, by server.
func serversFromConfig(f *config.File, client *http.Client) ([]Server, map[string][]string, error) {
	if f == nil {
		return nil, nil, errors.New("mcpguard: config: must not be nil")
	}
	if err := f.Validate(); err != nil {
		return nil, nil, fmt.Errorf("mcpguard: %w", err)
	}
	var (
		ps      []config.Problem
		out     []Server
		secrets = map[string][]string{}
	)
	for _, name := range slices.Sorted(maps.Keys(f.MCPServers)) {
		c := f.MCPServers[name]
		p := "mcp_servers." + pathSeg(name)
		headers := http.Header{}
		for _, h := range slices.Sorted(maps.Keys(c.HeaderEnv)) {
			env := c.HeaderEnv[h]
			v := os.Getenv(env)
			switch {
			case v == "":
				ps = append(ps, config.Problem{Path: p + ".header_env." + pathSeg(h), Message: fmt.Sprintf("environment variable %s is unset or empty", env)})
			case !validHeaderValue(v):
				ps = append(ps, config.Problem{Path: p + ".header_env." + pathSeg(h), Message: fmt.Sprintf("environment variable %s does not hold a valid header value (control characters)", env)})
			default:
				headers.Set(h, v)
				secrets[name] = append(secrets[name], v)
			}
		}
		s := serverFromConfig(name, c)
		hc := client
		if len(headers) > 0 {
			hc = withHeaders(client, headers)
		}
		s.Dial = StreamableHTTP(c.URL, hc)
		if err := s.Validate(); err != nil {
			ps = append(ps, problemsOf(p, err)...)
		}
		out = append(out, s)
	}
	if len(ps) > 0 {
		return nil, nil, fmt.Errorf("mcpguard: %w", &config.Error{Problems: ps})
	}
	return out, secrets, nil
}

// serverFromConfig is the policy of a configured server, without Dial.
func serverFromConfig(name string, c config.MCPServer) Server {
	return Server{
		Name: name, Capability: c.Capability, Required: c.Required,
		ConnectTimeout: time.Duration(c.ConnectTimeout), DiscoveryTimeout: time.Duration(c.DiscoveryTimeout),
		CallTimeout: time.Duration(c.CallTimeout), OperationBudget: time.Duration(c.OperationBudget),
		MinLeg: time.Duration(c.MinLeg),
		Retry: Retry{
			MaxAttempts: c.Retry.MaxAttempts, Base: time.Duration(c.Retry.Base), Cap: time.Duration(c.Retry.Cap),
			BudgetRatio: c.Retry.BudgetRatio, NoBudgetRatio: c.Retry.NoBudgetRatio, BudgetMin: c.Retry.BudgetMin,
			BudgetWindow: time.Duration(c.Retry.BudgetWindow),
		},
		Tools: c.Tools, IdempotentTools: c.IdempotentTools, Trusted: c.Trusted, ToolPrefix: c.ToolPrefix,
		MaxTools: c.MaxTools, MaxPages: c.MaxPages, ToolsTTL: time.Duration(c.ToolsTTL), NoLastGood: c.NoLastGood,
		MaxResultBytes: c.MaxResultBytes, ToolErrorDetail: c.ToolErrorDetail,
	}
}

// problemsOf turns Server.Validate's "field: message" errors into problems
// under prefix; its field names are the file's.
func problemsOf(prefix string, err error) []config.Problem {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]config.Problem, 0, len(errs))
	for _, e := range errs {
		field, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok || strings.ContainsAny(field, " ") {
			out = append(out, config.Problem{Path: prefix, Message: e.Error()})
			continue
		}
		if field == "breaker" {
			field = "policy"
		}
		out = append(out, config.Problem{Path: prefix + "." + field, Message: msg})
	}
	return out
}

// pathSeg quotes a name as config paths do when it is not a plain word.
func pathSeg(s string) string {
	if s == "" || strings.ContainsAny(s, ` ."[]`) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// validHeaderValue refuses control characters (CR and LF among them).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// withHeaders returns a copy of client (nil: http.DefaultClient) whose
// requests carry headers. The values are set on each outgoing request only;
// they are never formatted into an error or a log line.
func withHeaders(client *http.Client, headers http.Header) *http.Client {
	c := *cmp.Or(client, http.DefaultClient)
	c.Transport = &headerTransport{inner: cmp.Or[http.RoundTripper](c.Transport, http.DefaultTransport), headers: headers}
	return &c
}

type headerTransport struct {
	inner   http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.inner.RoundTrip(r)
}

// String never shows the values.
func (t *headerTransport) String() string {
	return fmt.Sprintf("mcpguard header transport (%d headers)", len(t.headers))
}
