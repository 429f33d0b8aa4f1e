package failover_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestOpenAIEndpointNeedsADKv2: the configuration file accepts backend
// openai, and the ADK v1 line, which has no OpenAI model, says so when it
// builds the chain, naming the endpoint.
func TestOpenAIEndpointNeedsADKv2(t *testing.T) {
	_, err := failover.FromConfig(t.Context(), "chat", config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: "gpt-5-mini", Backend: config.BackendOpenAI},
	}}, registry.MustNew())
	if err == nil || !strings.Contains(err.Error(), "models.chat.endpoints[0]") || !strings.Contains(err.Error(), "ADK Go v2") {
		t.Fatalf("error %v, want one naming the endpoint and ADK Go v2", err)
	}
}
