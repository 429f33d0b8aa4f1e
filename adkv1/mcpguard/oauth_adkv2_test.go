//go:build ignore

package mcpguard_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
)

// failingOAuth is an OAuth handler whose authorization flow fails (the
// authorization server cannot be reached); it counts its rounds.
type failingOAuth struct {
	*auth.AuthorizationCodeHandler // TokenSource: no token yet
	rounds                         *atomic.Int32
}

func (h failingOAuth) Authorize(context.Context, *http.Request, *http.Response) error {
	h.rounds.Add(1)
	return errors.New("authorization server unreachable")
}

// TestOAuthFailureAtConnectNotRetried: a failed OAuth flow at connect is an
// authorization failure, not a transport fault: the guarded connect runs no
// more authorization rounds than the bare go-sdk client's one connect
// (before: three attempts, three times the rounds). go-sdk v1.4.1 offers no
// OAuth handler without its mcp_go_client_oauth build tag, so this runs on
// the ADK v2 line.
func TestOAuthFailureAtConnectNotRetried(t *testing.T) {
	ts := newLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	var rounds atomic.Int32
	oauth := failingOAuth{AuthorizationCodeHandler: &auth.AuthorizationCodeHandler{}, rounds: &rounds}
	dial := func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: ts, HTTPClient: mcpguard.HTTPClient(nil), OAuthHandler: oauth}, nil
	}
	bare := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "v1"}, nil)
	bt, _ := dial(t.Context())
	if _, err := bare.Connect(t.Context(), bt, nil); err == nil {
		t.Fatal("bare connect with a failing OAuth flow succeeded")
	}
	bareRounds := rounds.Swap(0)
	g := httpGuard(t, testRegistry(t), mcpguard.Server{Name: "oauth", Required: true, Dial: dial})
	if e := asError(t, g.Start(t.Context())); e.Class != mcpguard.ClassAuth || e.Attempts != 1 {
		t.Errorf("OAuth failure at connect: %v (class %s, %d attempts); want auth, 1 attempt", e, e.Class, e.Attempts)
	}
	if got := rounds.Load(); got > bareRounds || got == 0 {
		t.Errorf("guarded connect ran %d authorization rounds, the bare client %d", got, bareRounds)
	}
}
