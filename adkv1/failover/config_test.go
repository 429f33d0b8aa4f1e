package failover_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestFromConfigFile(t *testing.T) {
	clearGenaiEnv(t)
	p, f := newFakeGemini(t), newFakeGemini(t)
	yaml := `version: 1
defaults:
  policy:
    consecutive_failures: 2
models:
  assistant:
    endpoints:
      - model: primary-model
        backend: gemini_api
        base_url: ` + p.srv.URL + `
        api_key_env: FAKE_GEMINI_KEY
        timeout: 45s
        policy:
          open_for: 1m
      - model: fallback-model
        backend: gemini_api
        base_url: ` + f.srv.URL + `
        api_key_env: FAKE_GEMINI_KEY
`
	file, err := config.Parse([]byte(yaml), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.MustNew(failover.RegistryOptions(file)...)
	m, err := failover.FromConfig(context.Background(), "assistant", file.Models["assistant"], reg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eps := m.Endpoints()
	if len(eps) != 2 || eps[0].ModelName != "primary-model" || eps[0].Timeout != 45*time.Second ||
		eps[0].Key != registry.Key("model:primary-model@gemini_api/"+p.srv.URL) {
		t.Fatalf("endpoints = %+v", eps)
	}
	// Model endpoints get the conservative model policy with their own
	// overrides, not the file's tool default (consecutive_failures: 2).
	pol := reg.PolicyFor(eps[0].Key)
	if pol.ConsecutiveFailures != 10 || pol.OpenFor != time.Minute || pol.MinCalls != 50 {
		t.Errorf("primary policy = %+v", pol)
	}
	if pol := reg.PolicyFor(eps[1].Key); !reflect.DeepEqual(pol, failover.DefaultPolicy().WithDefaults()) {
		t.Errorf("fallback policy = %+v", pol)
	}
	f.setDefault(reply{chunks: []string{"ok"}})
	p.setDefault(reply{status: 503, body: body503})
	r := run(t.Context(), m, userReq("hi"), false)
	if r.text() != "ok" {
		t.Errorf("text = %q errs %v", r.text(), r.errs)
	}
}

func TestFromConfigErrorsNameTheField(t *testing.T) {
	clearGenaiEnv(t)
	t.Setenv("EMPTY_KEY", "")
	reg := registry.MustNew()
	_, err := failover.FromConfig(context.Background(), "chat", config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "a", Backend: "anthropic"},
		{Model: "", Backend: config.BackendGeminiAPI},
		{Model: "b", Backend: config.BackendGeminiAPI, BaseURL: "ftp://x"},
	}}, reg)
	for _, want := range []string{"models.chat.endpoints[0].backend", "models.chat.endpoints[1].model", "models.chat.endpoints[2].base_url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	_, err = failover.FromConfig(context.Background(), "chat", config.ModelChain{}, reg)
	if err == nil || !strings.Contains(err.Error(), "models.chat.endpoints") {
		t.Errorf("empty chain: %v", err)
	}
	_, err = failover.FromConfig(context.Background(), "chat", config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "a", Backend: config.BackendGeminiAPI, APIKeyEnv: "EMPTY_KEY"},
		{Model: "a", Backend: config.BackendGeminiAPI, APIKeyEnv: "EMPTY_KEY"},
	}}, reg)
	if err == nil || !strings.Contains(err.Error(), "endpoints[1]") || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate endpoints: %v", err)
	}
	_, err = failover.FromConfig(context.Background(), "chat", config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "a", Backend: config.BackendGeminiAPI, APIKeyEnv: "EMPTY_KEY"},
	}}, reg)
	if err == nil || !strings.Contains(err.Error(), "models.chat.endpoints[0]: api_key_env: environment variable EMPTY_KEY is unset or empty") {
		t.Errorf("empty key: %v", err)
	}
}

func TestRetryAfterTransportOnlyRecordsForFailoverCalls(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(503)
	}))
	defer srv.Close()
	c := &http.Client{Transport: failover.RetryAfterTransport(nil)}
	resp, err := c.Get(srv.URL) // outside a failover call: passes through
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" || hits.Load() != 1 {
		t.Errorf("status %d", resp.StatusCode)
	}
	c.CloseIdleConnections()
}

func TestOneFileOneRegistryForPluginAndModel(t *testing.T) {
	clearGenaiEnv(t)
	g := newFakeGemini(t)
	yaml := `version: 1
defaults:
  policy: {consecutive_failures: 3}
dependencies:
  billing-api:
    tools: [get_invoice]
    policy: {open_for: 1m}
models:
  assistant:
    endpoints:
      - {model: gemini-2.5-flash, backend: gemini_api, base_url: "` + g.srv.URL + `", api_key_env: FAKE_GEMINI_KEY}
`
	f, err := config.Parse([]byte(yaml), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(failover.RegistryOptions(f)...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := failover.FromConfig(context.Background(), "assistant", f.Models["assistant"], reg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := breaker.New(breaker.WithRegistry(reg), breaker.WithConfig(f), breaker.WithModelGuard(m)); err != nil {
		t.Errorf("plugin with the shared registry and the same file: %v", err)
	}
	if p := reg.PolicyFor("billing-api"); p.ConsecutiveFailures != 3 || p.OpenFor != time.Minute {
		t.Errorf("dependency policy = %+v", p)
	}
}
