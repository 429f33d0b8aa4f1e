package failover

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/config"
)

// buildEndpoint builds a configured endpoint's model. The ADK v1 line ships
// only Gemini (model/gemini); OpenAI endpoints need ADK Go v2's
// model/openaimodel.
func buildEndpoint(ctx context.Context, e config.ModelEndpoint, base http.RoundTripper) (model.LLM, error) {
	if e.Backend == config.BackendOpenAI {
		return nil, errors.New("backend openai: ADK Go v1 has no OpenAI model; use the ADK Go v2 line of adkbreaker (model/openaimodel)")
	}
	return buildGemini(ctx, e, base)
}
