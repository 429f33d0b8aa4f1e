package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
)

// TestModelEndpointStallDeadlines: first_output_timeout and idle_timeout
// parse as durations (negative: off), in YAML and JSON.
func TestModelEndpointStallDeadlines(t *testing.T) {
	f := mustParse(t, `version: 1
models:
  assistant:
    endpoints:
      - {model: a, backend: gemini_api, first_output_timeout: 45s, idle_timeout: 20}
      - {model: b, backend: gemini_api, first_output_timeout: -1s}
`, config.YAML)
	e := f.Models["assistant"].Endpoints
	if time.Duration(e[0].FirstOutputTimeout) != 45*time.Second || time.Duration(e[0].IdleTimeout) != 20*time.Second {
		t.Fatalf("endpoint 0: first output %v, idle %v", e[0].FirstOutputTimeout, e[0].IdleTimeout)
	}
	if e[1].FirstOutputTimeout >= 0 || e[1].IdleTimeout != 0 {
		t.Fatalf("endpoint 1: first output %v, idle %v", e[1].FirstOutputTimeout, e[1].IdleTimeout)
	}
	j := mustParse(t, `{"version": 1, "models": {"assistant": {"endpoints": [{"model": "a", "backend": "gemini_api", "idle_timeout": "1m"}]}}}`, config.JSON)
	if got := time.Duration(j.Models["assistant"].Endpoints[0].IdleTimeout); got != time.Minute {
		t.Fatalf("JSON idle_timeout = %v", got)
	}
}

// TestOpenAIEndpoints: backend openai is accepted, with a base URL and a
// key variable, and named in its identity; Vertex AI's location and project
// are refused for it.
func TestOpenAIEndpoints(t *testing.T) {
	f := mustParse(t, `version: 1
models:
  assistant:
    endpoints:
      - {model: gpt-5-mini, backend: openai, api_key_env: OPENAI_API_KEY, base_url: "https://api.openai.com/v1", first_output_timeout: 2m}
      - {model: gemini-2.5-flash, backend: gemini_api}
`, config.YAML)
	e := f.Models["assistant"].Endpoints[0]
	if got, want := e.Identity(), "model:gpt-5-mini@openai/https://api.openai.com/v1"; got != want {
		t.Errorf("Identity = %q, want %q", got, want)
	}
	_, err := config.Parse([]byte("version: 1\nmodels:\n  chat:\n    endpoints:\n      - {model: m, backend: openai, location: us-central1}\n"), config.YAML)
	if err == nil || !strings.Contains(err.Error(), "vertex_ai only") {
		t.Errorf("openai with a location: %v", err)
	}
}
