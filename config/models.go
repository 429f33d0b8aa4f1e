package config

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Model backends.
const (
	BackendGeminiAPI = "gemini_api"
	BackendVertexAI  = "vertex_ai"
	// BackendOpenAI is the OpenAI Responses API (POST {base_url}/responses;
	// base_url defaults to https://api.openai.com/v1), called by ADK Go
	// v2's model/openaimodel. A server that offers only chat completions
	// does not work. The ADK v1 line has no OpenAI model: failover there
	// refuses such endpoints when it builds the chain.
	BackendOpenAI = "openai"
)

// otherBackends are names a user may write for backend that are not
// supported (another provider, a near spelling): an error repeats them,
// while any other refused value is shown only in part (it may be a secret
// typed into the wrong field).
var otherBackends = []string{"open_ai", "openai_compatible", "azure", "azure_openai", "anthropic", "bedrock", "ollama", "mistral", "cohere", "groq",
	"gemini", "google", "google_ai", "googleai", "vertex", "vertexai", "gemini-api", "vertex-ai", "aistudio", "ai_studio"}

func (c *File) validateModels() problems {
	var ps problems
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		p := "models." + seg(name)
		if strings.TrimSpace(name) == "" {
			ps.add(p, "empty chain name")
		}
		ps = append(ps, c.Models[name].validate(p)...)
	}
	return ps
}

func (ch ModelChain) validate(p string) problems {
	var ps problems
	if len(ch.Endpoints) == 0 {
		ps.add(p+".endpoints", "a chain needs at least one endpoint")
	}
	seen := map[string]int{}
	for i, e := range ch.Endpoints {
		ep := index(p+".endpoints", i)
		if strings.TrimSpace(e.Model) == "" {
			ps.add(ep+".model", "required")
		}
		switch e.Backend {
		case BackendGeminiAPI:
			if e.Location != "" || e.Project != "" {
				ps.add(ep, "location/project apply to vertex_ai only")
			}
		case BackendVertexAI:
			if e.APIKeyEnv != "" && (e.Location != "" || e.Project != "") {
				ps.add(ep+".api_key_env", "a Vertex AI API key (express mode) excludes location/project")
			}
		case BackendOpenAI:
			if e.Location != "" || e.Project != "" {
				ps.add(ep, "location/project apply to vertex_ai only")
			}
		case "":
			ps.add(ep+".backend", "required (%q, %q or %q)", BackendGeminiAPI, BackendVertexAI, BackendOpenAI)
		default:
			// unknown backend "openai", or unknown backend: a string of 9
			// characters ("hu…")
			got := refusedChoice(e.Backend, []string{BackendGeminiAPI, BackendVertexAI, BackendOpenAI}, otherBackends...)
			if v, whole := strings.CutPrefix(got, "the string "); whole {
				got = " " + v
			} else {
				got = ": " + got
			}
			ps.add(ep+".backend", "unknown backend%s (want %q, %q or %q)", got, BackendGeminiAPI, BackendVertexAI, BackendOpenAI)
		}
		if e.BaseURL != "" {
			if msg := baseURLProblem(e.BaseURL); msg != "" {
				ps.add(ep+".base_url", "%s", msg)
			}
		}
		if e.APIKeyEnv != "" && !envName(e.APIKeyEnv) {
			ps.add(ep+".api_key_env", "want the name of an environment variable (like GEMINI_API_KEY), not a key; got a %d-byte value that is not a variable name (not shown)", len(e.APIKeyEnv))
		}
		if e.Timeout < 0 {
			ps.add(ep+".timeout", "must be ≥ 0")
		}
		id := e.Identity()
		if strings.TrimSpace(e.Model) != "" && !registry.Key(id).Valid() {
			ps.add(ep, "identity %s is not a valid breaker key (at most %d printable bytes; shorten base_url)", quoteShort(id, 60), registry.MaxKeyLen)
		}
		if j, dup := seen[id]; dup {
			ps.add(ep, "duplicate of endpoints[%d] (%s)", j, id)
		}
		seen[id] = i
		if e.Policy != nil {
			ps = append(ps, splitErrs(ep+".policy", e.Policy.Registry().Validate())...)
		}
		if t := e.Throttle; t != nil {
			if t.K != 0 && !(t.K > 1 && t.K <= 10) {
				ps.add(ep+".throttle.k", "must be in (1, 10], got %v (at 1 or below the throttle never notices the endpoint recover)", t.K)
			}
			if t.Window != 0 && (time.Duration(t.Window) < time.Second || time.Duration(t.Window) > time.Hour) {
				ps.add(ep+".throttle.window", "must be in [1s, 1h], got %s", time.Duration(t.Window))
			}
			if t.MaxRejectProbability != 0 && !(t.MaxRejectProbability > 0 && t.MaxRejectProbability <= 1) {
				ps.add(ep+".throttle.max_reject_probability", "must be in (0, 1], got %v", t.MaxRejectProbability)
			}
			if i == len(ch.Endpoints)-1 {
				ps.add(ep+".throttle", "the last endpoint has no next endpoint to send shed calls to")
			}
		}
	}
	return ps
}

// Identity is the endpoint's breaker identity: model, backend and
// location or base URL, so an outage in one region does not trip another.
// Of the base URL only scheme, host, port and path are kept (SafeBaseURL):
// the identity names the endpoint in breaker keys, errors, logs and metric
// attributes, so it never carries user info or a query.
func (e ModelEndpoint) Identity() string {
	where := e.Location
	if e.BaseURL != "" {
		where = SafeBaseURL(e.BaseURL)
	}
	return "model:" + e.Model + "@" + e.Backend + "/" + where
}

// SafeBaseURL returns the parts of a base URL that may name an endpoint:
// scheme://host[:port][/path], without user info, query or fragment. A URL
// that does not parse, or whose path holds a credential, becomes
// "invalid-base-url" (validation reports it).
func SafeBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || redact.Sensitive(u.EscapedPath()) {
		return "invalid-base-url"
	}
	safe := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return safe.String()
}

// baseURLProblem says what is wrong with a base_url, without repeating it
// (it may hold a credential), or returns "".
func baseURLProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "want an http(s) URL"
	case u.User != nil:
		return "must not carry user info (credentials; not shown): name the host only and put the key in an environment variable named by api_key_env"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "must not have a query or fragment (not shown): keys belong in an environment variable named by api_key_env"
	case redact.Sensitive(u.EscapedPath()) || redact.Sensitive(u.Host):
		return "looks like it holds a credential (not shown): keys belong in an environment variable named by api_key_env"
	}
	return ""
}

// envName reports whether s is the name of an environment variable (letters,
// digits and underscores, not starting with a digit, at most 128 bytes) and
// does not look like a key itself. It is the one check of every field that
// names a variable (api_key_env, header_env, password_env, replica_id_env):
// a value refused by it is never echoed.
func envName(s string) bool {
	if s == "" || len(s) > 128 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return !redact.Sensitive(s)
}
