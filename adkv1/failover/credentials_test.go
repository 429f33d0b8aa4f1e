package failover_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Secrets that a base URL or api_key_env may carry by mistake; none may
// appear in a key, an error, a log line or a metric attribute.
const (
	urlPassword = "s3cretPassw0rd"
	urlQueryKey = "QUERYKEY0123456789"
	pastedKey   = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
)

var credURL = "https://svc:" + urlPassword + "@gemini.internal.example/v1beta?key=" + urlQueryKey

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range []string{urlPassword, urlQueryKey, pastedKey, "svc:"} {
		if strings.Contains(text, s) {
			t.Errorf("%s holds %q: %s", where, s, text)
		}
	}
}

func TestEndpointKeyNeverCarriesCredentials(t *testing.T) {
	k := failover.EndpointKey("gemini-2.5-pro", "gemini_api", credURL)
	if want := registry.Key("model:gemini-2.5-pro@gemini_api/https://gemini.internal.example/v1beta"); k != want {
		t.Errorf("EndpointKey = %q, want %q", k, want)
	}
	e := config.ModelEndpoint{Model: "gemini-2.5-pro", Backend: config.BackendGeminiAPI, BaseURL: credURL}
	assertNoSecret(t, "Identity", e.Identity())
}

// TestCredentialsRejectedAtConfiguration: a base_url with user info or a
// query, and a key pasted into api_key_env, are refused by FromConfig and
// by the configuration file, all listed at once, without echoing them.
func TestCredentialsRejectedAtConfiguration(t *testing.T) {
	clearGenaiEnv(t)
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "a", Backend: config.BackendGeminiAPI, BaseURL: credURL},
		{Model: "b", Backend: config.BackendGeminiAPI, BaseURL: "https://gemini.example/?key=" + urlQueryKey},
		{Model: "c", Backend: config.BackendGeminiAPI, APIKeyEnv: pastedKey},
		{Model: "d", Backend: config.BackendGeminiAPI, BaseURL: "https://gemini.example/key/" + pastedKey},
	}}
	_, err := failover.FromConfig(context.Background(), "chat", chain, registry.MustNew())
	if err == nil {
		t.Fatal("FromConfig accepted credentials")
	}
	for _, want := range []string{"endpoints[0].base_url", "endpoints[1].base_url", "endpoints[2].api_key_env", "endpoints[3].base_url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	assertNoSecret(t, "FromConfig error", err.Error())

	yaml := fmt.Sprintf("version: 1\nmodels:\n  chat:\n    endpoints:\n"+
		"      - {model: a, backend: gemini_api, base_url: %q}\n"+
		"      - {model: c, backend: gemini_api, api_key_env: %q}\n", credURL, pastedKey)
	_, err = config.Parse([]byte(yaml), config.YAML)
	if err == nil {
		t.Fatal("config.Parse accepted credentials")
	}
	for _, want := range []string{"endpoints[0].base_url", "endpoints[1].api_key_env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	assertNoSecret(t, "config error", err.Error())

	// Go options: a key built by hand from such a URL.
	_, err = failover.New("chat", registry.MustNew(), []failover.Endpoint{
		{LLM: &endpointLLM{name: "a"}, Key: registry.Key("model:a@gemini_api/" + credURL)},
		{LLM: &endpointLLM{name: "b"}, Key: registry.Key("model:b@gemini_api/" + pastedKey)},
	})
	if err == nil || !strings.Contains(err.Error(), "endpoints[0].key") || !strings.Contains(err.Error(), "endpoints[1].key") {
		t.Fatalf("New error = %v, want both keys refused", err)
	}
	assertNoSecret(t, "New error", err.Error())
}

// TestNoCredentialInErrorsLogsOrMetrics: endpoints named from credentialed
// URLs through EndpointKey fail; the failover.Error, every log line and
// every metric attribute name them without the credentials.
func TestNoCredentialInErrorsLogsOrMetrics(t *testing.T) {
	logs := &logBuf{}
	reader := sdkmetric.NewManualReader()
	reg := registry.MustNew()
	stop := failover.LogTransitions(reg, logs.logger())
	defer stop()
	fail := genai.APIError{Code: 503, Status: "UNAVAILABLE"}
	m, err := failover.New("chat", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "primary", err: fail}, Key: failover.EndpointKey("primary", "gemini_api", credURL)},
		{LLM: &endpointLLM{name: "fallback", err: fail}, Key: failover.EndpointKey("fallback", "gemini_api", credURL+"&x=1")},
	}, failover.WithLogger(logs.logger()), failover.WithLogInterval(-1),
		failover.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		failover.WithErrorWhenUnavailable())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var errText strings.Builder
	for range 12 {
		for _, err := range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
			var fe *failover.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *failover.Error", err)
			}
			errText.WriteString(err.Error() + "\n")
		}
	}
	reg.Flush(context.Background())
	if errText.Len() == 0 || logs.String() == "" {
		t.Fatalf("nothing to check: errors %q, logs %q", errText.String(), logs.String())
	}
	assertNoSecret(t, "failover.Error", errText.String())
	assertNoSecret(t, "logs", logs.String())
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var attrs strings.Builder
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if s, ok := mt.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					fmt.Fprintln(&attrs, dp.Attributes.ToSlice())
				}
			}
		}
	}
	if attrs.Len() == 0 {
		t.Fatal("no metric attributes to check")
	}
	assertNoSecret(t, "metric attributes", attrs.String())
}
