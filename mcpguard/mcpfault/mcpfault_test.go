package mcpfault_test

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/mcpguard/mcpfault"
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

func TestBlackholeAndLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Blackhole})
		defer fs.Close()
		tr, _ := fs.Dial(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, tr, nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("blackhole connect: %v after %s", err, time.Since(start))
		}
		if fs.Requests("initialize") != 0 {
			t.Error("a blackholed request reached the handlers")
		}

		fs.SetMode(mcpfault.None)
		fs.SetLatency("initialize", 3*time.Second)
		start = time.Now()
		s := connect(t, t.Context(), fs)
		defer s.Close()
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("handshake took %s, want the 3s latency", d)
		}
	})
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
