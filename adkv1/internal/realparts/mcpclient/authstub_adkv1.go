//go:build !mcp_go_client_oauth

package main

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// oauthHandler: go-sdk v1.4.1 (the ADK v1 line) builds its OAuth client only
// with the build tag mcp_go_client_oauth (mcp-conformance.sh sets it).
func oauthHandler(map[string]any) (auth.OAuthHandler, error) {
	return nil, errors.New("built without the tag mcp_go_client_oauth: no OAuth client in go-sdk v1.4.1")
}

// fetchCode serves the OAuth client only.
var _ = fetchCode
