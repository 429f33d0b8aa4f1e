//go:build mcp_go_client_oauth

package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oauthHandler is the go-sdk's authorization-code handler as its own
// conformance client sets it up (go-sdk v1.4.1, the ADK v1 line, where the
// OAuth client needs the build tag mcp_go_client_oauth).
func oauthHandler(confCtx map[string]any) (auth.OAuthHandler, error) {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: "http://localhost:3000/callback",
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			code, state, _, err := fetchCode(ctx, args.URL)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: code, State: state}, nil
		},
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://conformance-test.local/client-metadata.json"},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://localhost:3000/callback"}},
		},
	}
	if id, ok := confCtx["client_id"].(string); ok {
		if secret, ok := confCtx["client_secret"].(string); ok {
			cfg.PreregisteredClientConfig = &auth.PreregisteredClientConfig{
				ClientSecretAuthConfig: &auth.ClientSecretAuthConfig{ClientID: id, ClientSecret: secret},
			}
		}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}
