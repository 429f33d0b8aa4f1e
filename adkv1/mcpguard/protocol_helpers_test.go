package mcpguard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// The MCP protocol versions a test has to tell apart: from 2026-07-28 on,
// a client connects with one server/discover and no session; before, with
// initialize and notifications/initialized, and over HTTP a session.
const sessionlessVersion = "2026-07-28"

var sessionlessClient = sync.OnceValue(func() bool {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	tr, err := fs.Dial(context.Background())
	if err != nil {
		panic(err)
	}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "probe"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	return s.InitializeResult().ProtocolVersion >= sessionlessVersion
})

// protocol is one kind of server a test runs against.
type protocol struct {
	// legacy: a server from before the sessionless protocol (mcpfault's
	// Config.Legacy).
	legacy bool
}

func (p protocol) String() string {
	if p.legacy {
		return "legacy_server"
	}
	return "current_server"
}

// fallback reports whether a connect sends server/discover and then, refused,
// initialize: a go-sdk ≥ v1.7.0 client on a legacy server.
func (p protocol) fallback() bool { return p.legacy && sessionlessClient() }

// initializes reports whether a connect runs the legacy handshake
// (initialize, notifications/initialized) at all.
func (p protocol) initializes() bool { return p.legacy || !sessionlessClient() }

// handshakeRequests is how many handshake requests one connect sends:
// server/discover, initialize, or both.
func (p protocol) handshakeRequests() int {
	if p.fallback() {
		return 2
	}
	return 1
}

// handshakeTime is what one connect costs with latency on every handshake
// request (mcpfault.Handshake) and on notifications/initialized.
func (p protocol) handshakeTime(perRequest, initialized time.Duration) time.Duration {
	d := time.Duration(p.handshakeRequests()) * perRequest
	if p.initializes() {
		d += initialized
	}
	return d
}

// sessions reports whether the server keeps HTTP sessions (Mcp-Session-Id).
func (p protocol) sessions() bool { return p.legacy }

func (p protocol) config(cfg mcpfault.Config) mcpfault.Config {
	cfg.Legacy = p.legacy
	return cfg
}

var protocols = []protocol{{legacy: false}, {legacy: true}}

// forProtocols runs f against a current server and a legacy one.
func forProtocols(t *testing.T, f func(t *testing.T, p protocol)) {
	t.Helper()
	sessionlessClient() // probed outside any synctest bubble
	for _, p := range protocols {
		t.Run(p.String(), func(t *testing.T) { f(t, p) })
	}
}

func (p protocol) describe() string {
	return fmt.Sprintf("%s (client sessionless: %v)", p, sessionlessClient())
}
