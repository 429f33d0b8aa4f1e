package mcpfault_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

func connect(t *testing.T, ctx context.Context, fs *mcpfault.Server) *mcp.ClientSession {
	t.Helper()
	tr, err := fs.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFlappingPatterns(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mcpfault.Config
		want []bool // call i succeeds
	}{
		{"alternate", mcpfault.Config{Mode: mcpfault.Flapping}, []bool{false, true, false, true}},
		{"every2", mcpfault.Config{Mode: mcpfault.Flapping, FlapEvery: 2}, []bool{false, false, true, true, false}},
		{"recover_after_3", mcpfault.Config{Mode: mcpfault.Flapping, RecoverAfter: 3}, []bool{false, false, false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(tc.cfg)
				defer fs.Close()
				ok := 0
				for i, want := range tc.want {
					s := connect(t, t.Context(), fs) // a failing call drops the connection
					_, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": i}})
					if (err == nil) != want {
						t.Errorf("call %d: err = %v, want success %v", i, err, want)
					}
					if err == nil {
						ok++
					}
					s.Close()
				}
				if fs.Executions("charge") != ok {
					t.Errorf("executions = %d, want %d (a failing call never runs)", fs.Executions("charge"), ok)
				}
			})
		})
	}
}

func TestUnreachable(t *testing.T) {
	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Unreachable})
	defer fs.Close()
	if _, err := fs.Dial(context.Background()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("in-process dial: %v", err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	t2, _ := fs.HTTPDial(&http.Client{Transport: tr})(context.Background())
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), t2, nil); err == nil {
		t.Error("HTTP connect to an unreachable server succeeded")
	}
}

// sessionlessVersion is the first MCP protocol version without the
// initialize handshake.
const sessionlessVersion = "2026-07-28"

// clientIsSessionless reports whether this build's go-sdk client speaks the
// sessionless protocol (go-sdk ≥ v1.7.0), by asking a current server.
func clientIsSessionless(t *testing.T) bool {
	t.Helper()
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	s := connect(t, t.Context(), fs)
	defer s.Close()
	return s.InitializeResult().ProtocolVersion >= sessionlessVersion
}

func TestBlackholeAndLatency(t *testing.T) {
	sessionless := clientIsSessionless(t)
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Blackhole, Legacy: legacy})
				defer fs.Close()
				tr, _ := fs.Dial(t.Context())
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				start := time.Now()
				_, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, tr, nil)
				if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
					t.Errorf("blackhole connect: %v after %s", err, time.Since(start))
				}
				if fs.Requests("initialize")+fs.Requests("server/discover") != 0 || fs.Handshakes() != 0 {
					t.Error("a blackholed request reached the handlers")
				}

				fs.SetMode(mcpfault.None)
				fs.SetLatency(mcpfault.Handshake, 3*time.Second)
				start = time.Now()
				s := connect(t, t.Context(), fs)
				defer s.Close()
				// Every handshake request the client sent paid the latency:
				// one, or two when a current client falls back on a legacy
				// server.
				legs := 1
				if legacy && sessionless {
					legs = 2
				}
				if d := time.Since(start); d != time.Duration(legs)*3*time.Second {
					t.Errorf("handshake took %s, want %d × the 3s latency", d, legs)
				}
				if n := fs.Requests("initialize") + fs.Requests("server/discover"); n != legs {
					t.Errorf("%d handshake requests, want %d", n, legs)
				}
				if fs.Handshakes() != 1 {
					t.Errorf("handshakes = %d, want 1", fs.Handshakes())
				}
			})
		})
	}
}

// TestProtocols: a Legacy server makes a current client fall back to the
// initialize handshake and, over HTTP, keeps a session; a current server
// speaks the client's newest protocol and, over HTTP, keeps none.
func TestProtocols(t *testing.T) {
	sessionless := clientIsSessionless(t)
	for _, legacy := range []bool{false, true} {
		for _, overHTTP := range []bool{false, true} {
			t.Run(fmt.Sprintf("legacy=%v/http=%v", legacy, overHTTP), func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{Legacy: legacy})
				defer fs.Close()
				htr := &http.Transport{}
				defer htr.CloseIdleConnections()
				var tr mcp.Transport
				var err error
				if overHTTP {
					tr, err = fs.HTTPDial(&http.Client{Transport: htr})(t.Context())
				} else {
					tr, err = fs.Dial(t.Context())
				}
				if err != nil {
					t.Fatal(err)
				}
				s, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), tr, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				pv := s.InitializeResult().ProtocolVersion
				if got, want := pv >= sessionlessVersion, sessionless && !legacy; got != want {
					t.Errorf("protocol %s: sessionless = %v, want %v", pv, got, want)
				}
				// A legacy server hands out a session; a current one on the
				// sessionless protocol none (an older go-sdk's stateless
				// handler still sends an id, which it never checks).
				if overHTTP && legacy && s.ID() == "" {
					t.Error("no session id from a legacy server")
				}
				if overHTTP && !legacy && sessionless && s.ID() != "" {
					t.Errorf("session id %q from a sessionless server", s.ID())
				}
				if fs.Handshakes() != 1 {
					t.Errorf("handshakes = %d, want 1", fs.Handshakes())
				}
				wantDiscover := 0
				if sessionless {
					wantDiscover = 1 // a current client asks first, on either server
				}
				if n := fs.Requests("server/discover"); n != wantDiscover {
					t.Errorf("server/discover requests = %d, want %d", n, wantDiscover)
				}
				res, err := s.ListTools(t.Context(), nil)
				if err != nil || len(res.Tools) != len(mcpfault.DefaultTools()) {
					t.Fatalf("tools/list: %v, %v", res, err)
				}
				if _, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestSlowModesEndWithTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.SlowCall, Delay: time.Hour})
		defer fs.Close()
		s := connect(t, t.Context(), fs)
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
		synctest.Wait() // the server's handler ended with the client's cancellation
		if fs.Executions("echo") != 0 {
			t.Errorf("echo ran after the client gave up")
		}
	})
}
