package config

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Model backends.
const (
	BackendGeminiAPI = "gemini_api"
	BackendVertexAI  = "vertex_ai"
)

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
		case "":
			ps.add(ep+".backend", "required (%q or %q)", BackendGeminiAPI, BackendVertexAI)
		default:
			ps.add(ep+".backend", "unknown backend %s (want %q or %q)", quoteShort(e.Backend, 40), BackendGeminiAPI, BackendVertexAI)
		}
		if e.BaseURL != "" {
			if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				ps.add(ep+".base_url", "want an http(s) URL")
			}
		}
		if e.APIKeyEnv != "" && strings.ContainsAny(e.APIKeyEnv, " \t=") {
			ps.add(ep+".api_key_env", "want the name of an environment variable (like GEMINI_API_KEY), not a key; got a %d-byte value that is not a variable name", len(e.APIKeyEnv))
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
	}
	return ps
}

// Identity is the endpoint's breaker identity: model, backend and
// location or base URL, so an outage in one region does not trip another.
func (e ModelEndpoint) Identity() string {
	where := e.Location
	if e.BaseURL != "" {
		where = e.BaseURL
	}
	return "model:" + e.Model + "@" + e.Backend + "/" + where
}
