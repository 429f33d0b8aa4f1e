package failover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/adk/model/gemini"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// transportFactory builds the base transport of FromConfig's clients.
type transportFactory func() http.RoundTripper

// WithBaseTransport sets the HTTP transport under RetryAfterTransport for the
// clients FromConfig builds (a proxy, otelhttp, a test server's client).
// Default http.DefaultTransport.
func WithBaseTransport(rt http.RoundTripper) Option {
	return optionFunc(func(s *settings) {
		if rt == nil {
			s.errs = append(s.errs, errors.New("base transport: must not be nil"))
			return
		}
		s.transport = func() http.RoundTripper { return rt }
	})
}

// FromConfig builds a failover Model named name from a configuration chain:
// one ADK gemini model (model/gemini, on the real genai client) per
// endpoint, in order, each keyed by config.ModelEndpoint.Identity and bounded
// by its Timeout. Each client's transport is RetryAfterTransport, so
// Retry-After headers become cool-down floors.
//
// An endpoint's API key is read from the environment variable its
// api_key_env names (an unset or empty variable is an error); without
// api_key_env, genai's own environment rules apply (GOOGLE_API_KEY or
// GEMINI_API_KEY for the Gemini API, application default credentials for
// Vertex AI).
//
// reg must hold the endpoints' policies: build it with RegistryOptions (or
// ChainPolicyOptions), otherwise New warns that the breakers fall back to the
// registry's default policy. Errors name the field at fault; a key never
// appears in them.
func FromConfig(ctx context.Context, name string, chain config.ModelChain, reg *registry.Registry, opts ...Option) (*Model, error) {
	// Validate the chain as the configuration file would.
	if err := (&config.File{Version: 1, Models: map[string]config.ModelChain{name: chain}}).Validate(); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	s := settings{}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	base := http.DefaultTransport
	if s.transport != nil {
		base = s.transport()
	}
	var errs []error
	eps := make([]Endpoint, 0, len(chain.Endpoints))
	for i, e := range chain.Endpoints {
		p := fmt.Sprintf("models.%s.endpoints[%d]", name, i)
		llm, err := buildEndpoint(ctx, e, base)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		ep := Endpoint{LLM: llm, Key: endpointKey(e), ModelName: e.Model, Timeout: time.Duration(e.Timeout),
			FirstOutputTimeout: time.Duration(e.FirstOutputTimeout), IdleTimeout: time.Duration(e.IdleTimeout)}
		if t := e.Throttle; t != nil {
			ep.Throttle = &Throttle{K: t.K, Window: time.Duration(t.Window), MaxRejectProbability: t.MaxRejectProbability}
		}
		eps = append(eps, ep)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	return New(name, reg, eps, opts...)
}

func buildGemini(ctx context.Context, e config.ModelEndpoint, base http.RoundTripper) (model.LLM, error) {
	cc := &genai.ClientConfig{
		Project: e.Project, Location: e.Location,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.BaseURL},
	}
	switch e.Backend {
	case config.BackendGeminiAPI:
		cc.Backend = genai.BackendGeminiAPI
	case config.BackendVertexAI:
		cc.Backend = genai.BackendVertexAI
	}
	if e.APIKeyEnv != "" {
		cc.APIKey = os.Getenv(e.APIKeyEnv)
		if cc.APIKey == "" {
			return nil, fmt.Errorf("api_key_env: environment variable %s is unset or empty", showEnvName(e.APIKeyEnv))
		}
	}
	// Vertex AI without a key authenticates with application default
	// credentials, which genai wires into the client it builds itself; the
	// Retry-After transport is then installed on that client afterwards.
	adc := cc.Backend == genai.BackendVertexAI && cc.APIKey == "" &&
		!(e.BaseURL != "" && e.Project == "" && e.Location == "")
	if !adc {
		cc.HTTPClient = &http.Client{Transport: RetryAfterTransport(base)}
	}
	llm, err := gemini.NewModel(ctx, e.Model, cc)
	if err != nil {
		// genai formats its ClientConfig (API key included) into some errors.
		msg := err.Error()
		if cc.APIKey != "" {
			msg = strings.ReplaceAll(msg, cc.APIKey, "[redacted]")
		}
		return nil, fmt.Errorf("building the gemini client: %s", msg)
	}
	if adc {
		if c, ok := llm.(interface{ Client() *genai.Client }); ok {
			if hc := c.Client().ClientConfig().HTTPClient; hc != nil {
				hc.Transport = RetryAfterTransport(hc.Transport)
			}
		}
	}
	return llm, nil
}

// showEnvName returns an environment variable's name for an error message if
// it has the conventional shape (upper case, digits, underscores), and a
// placeholder otherwise: a value pasted in place of the name may be the key.
func showEnvName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Sprintf("(a %d-byte name, not shown)", len(name))
		}
	}
	if redact.Sensitive(name) {
		return fmt.Sprintf("(a %d-byte name, not shown)", len(name))
	}
	return name
}

// endpointKey is a configured endpoint's breaker key: its Identity.
func endpointKey(e config.ModelEndpoint) registry.Key { return registry.Key(e.Identity()) }

// PolicyFor returns the breaker policy of a configured endpoint:
// DefaultPolicy with the endpoint's own policy fields applied. Model
// endpoints do not inherit the file's defaults.policy, which is tuned for
// tools.
func PolicyFor(e config.ModelEndpoint) registry.Policy {
	if e.Policy == nil {
		return DefaultPolicy()
	}
	return e.Policy.Apply(DefaultPolicy())
}

// ChainPolicyOptions returns a registry.WithPolicy option for every endpoint
// of chain (PolicyFor).
func ChainPolicyOptions(chain config.ModelChain) []registry.Option {
	out := make([]registry.Option, 0, len(chain.Endpoints))
	for _, e := range chain.Endpoints {
		out = append(out, registry.WithPolicy(endpointKey(e), PolicyFor(e)))
	}
	return out
}

// RegistryOptions returns the registry options of a whole configuration
// file: its dependencies' (f.RegistryOptions) plus the policy of every model
// endpoint of every chain. Build the one registry shared by the plugin and
// the failover models with it:
//
//	f, err := config.Load("adkbreaker.yaml")
//	reg, err := registry.New(failover.RegistryOptions(f)...)
//	m, err := failover.FromConfig(ctx, "assistant", f.Models["assistant"], reg)
//	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithModelGuard(m), …)
func RegistryOptions(f *config.File) []registry.Option {
	out := f.RegistryOptions()
	for _, name := range slices.Sorted(maps.Keys(f.Models)) {
		out = append(out, ChainPolicyOptions(f.Models[name])...)
	}
	return out
}
