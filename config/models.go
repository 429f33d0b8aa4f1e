package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Model backends.
const (
	BackendGeminiAPI = "gemini_api"
	BackendVertexAI  = "vertex_ai"
)

func (c *File) validateModels() []error {
	var errs []error
	for _, name := range sortedKeys(c.Models) {
		ch := c.Models[name]
		p := "models." + name
		if strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("%s: empty chain name", p))
		}
		if len(ch.Endpoints) == 0 {
			errs = append(errs, fmt.Errorf("%s.endpoints: a chain needs at least one endpoint", p))
		}
		seen := map[string]int{}
		for i, e := range ch.Endpoints {
			ep := fmt.Sprintf("%s.endpoints[%d]", p, i)
			if strings.TrimSpace(e.Model) == "" {
				errs = append(errs, fmt.Errorf("%s.model: required", ep))
			}
			switch e.Backend {
			case BackendGeminiAPI:
				if e.Location != "" || e.Project != "" {
					errs = append(errs, fmt.Errorf("%s: location/project apply to vertex_ai only", ep))
				}
			case BackendVertexAI:
			case "":
				errs = append(errs, fmt.Errorf("%s.backend: required (%q or %q)", ep, BackendGeminiAPI, BackendVertexAI))
			default:
				errs = append(errs, fmt.Errorf("%s.backend: unknown backend %q (want %q or %q)", ep, e.Backend, BackendGeminiAPI, BackendVertexAI))
			}
			if e.BaseURL != "" {
				if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
					errs = append(errs, fmt.Errorf("%s.base_url: want an http(s) URL", ep))
				}
			}
			if e.Timeout < 0 {
				errs = append(errs, fmt.Errorf("%s.timeout: must be ≥ 0", ep))
			}
			id := e.Identity()
			if j, dup := seen[id]; dup {
				errs = append(errs, fmt.Errorf("%s: duplicate of endpoints[%d] (%s)", ep, j, id))
			}
			seen[id] = i
			if e.Policy != nil {
				errs = append(errs, policyErrs(ep+".policy", e.Policy.Registry())...)
			}
		}
	}
	return errs
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
