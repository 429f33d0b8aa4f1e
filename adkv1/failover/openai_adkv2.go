//go:build ignore

package failover

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/adkbreaker/adkbreaker/config"
)

// buildEndpoint builds a configured endpoint's model: ADK's model/gemini
// for gemini_api and vertex_ai, ADK's model/openaimodel for openai.
func buildEndpoint(ctx context.Context, e config.ModelEndpoint, base http.RoundTripper) (model.LLM, error) {
	if e.Backend != config.BackendOpenAI {
		return buildGemini(ctx, e, base)
	}
	return buildOpenAI(ctx, e, base)
}

// buildOpenAI builds an OpenAI Responses API endpoint. openai-go's own
// retries are off (option.WithMaxRetries(0)): failover owns retries, by
// moving on to the next endpoint, so a 429's retry hint reaches the
// endpoint's breaker instead of being slept through under the endpoint's
// Timeout. Without api_key_env, openai-go reads OPENAI_API_KEY.
func buildOpenAI(ctx context.Context, e config.ModelEndpoint, base http.RoundTripper) (model.LLM, error) {
	cc := &openaimodel.ClientConfig{
		BaseURL:    e.BaseURL,
		HTTPClient: &http.Client{Transport: RetryAfterTransport(base)},
		Options:    []option.RequestOption{option.WithMaxRetries(0)},
	}
	if e.APIKeyEnv != "" {
		cc.APIKey = os.Getenv(e.APIKeyEnv)
		if cc.APIKey == "" {
			return nil, fmt.Errorf("api_key_env: environment variable %s is unset or empty", showEnvName(e.APIKeyEnv))
		}
	}
	llm, err := openaimodel.NewModel(ctx, e.Model, cc)
	if err != nil {
		return nil, fmt.Errorf("building the openai client: %w", err) // openaimodel's errors name no key
	}
	return llm, nil
}
