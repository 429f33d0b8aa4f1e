package mcpfault

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// malformedResult is what Malformed sends instead of a tools/call result:
// valid JSON of the wrong shape.
const malformedResult = `{"content":"not-a-list","isError":"nope"}`

// connTransport hands the server one prepared connection.
type connTransport struct{ c *faultConn }

func (t *connTransport) Connect(context.Context) (mcp.Connection, error) {
	inner, err := (&mcp.IOTransport{Reader: t.c.raw, Writer: t.c.raw}).Connect(context.Background())
	if err != nil {
		return nil, err
	}
	t.c.inner = inner
	return t.c, nil
}

// faultConn is the server side of an in-process connection. It swallows
// everything in Blackhole mode, drops the connection on a failing Flapping
// call, and corrupts tools/call responses in Malformed and Truncated modes.
type faultConn struct {
	s     *Server
	raw   net.Conn
	inner mcp.Connection

	wmu     sync.Mutex // serialises writes, ours and the inner connection's
	mu      sync.Mutex
	methods map[any]string // Guarded by mu: request ID → method.
	once    sync.Once
}

func (c *faultConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.inner.Read(ctx)
		if err != nil {
			return nil, err
		}
		if c.s.Mode() == Blackhole {
			continue // read, never answered
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if req.Method == methodDiscover && c.s.cfg.Legacy {
				// An old server: the method does not exist.
				c.s.refuseDiscover()
				c.wmu.Lock()
				err := c.inner.Write(ctx, discoverRefusal(req.ID))
				c.wmu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			}
			if req.Method == "tools/call" && c.s.flapDown() {
				_ = c.Close() // down: the tool never runs
				return nil, io.EOF
			}
			c.mu.Lock()
			c.methods[req.ID.Raw()] = req.Method
			c.mu.Unlock()
		}
		return m, nil
	}
}

func (c *faultConn) Write(ctx context.Context, m jsonrpc.Message) error {
	mode := c.s.Mode()
	if mode == Blackhole {
		return nil
	}
	if r, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		method := c.methods[r.ID.Raw()]
		delete(c.methods, r.ID.Raw())
		c.mu.Unlock()
		if method == "tools/call" && r.Error == nil {
			switch mode {
			case Malformed:
				m = &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(malformedResult)}
			case Dropped:
				_ = c.Close()
				return io.ErrClosedPipe
			case Truncated:
				data, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					return err
				}
				c.wmu.Lock()
				_, _ = c.raw.Write(data[:len(data)/2])
				c.wmu.Unlock()
				_ = c.Close()
				return io.ErrClosedPipe
			}
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.inner.Write(ctx, m)
}

func (c *faultConn) Close() error {
	c.once.Do(func() {
		_ = c.raw.Close()
		if c.inner != nil {
			_ = c.inner.Close()
		}
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return nil
}

func (c *faultConn) SessionID() string { return "" }

// latencyTransport is the client side of an in-process connection: writes
// of a method listed in Config.Latency take that long (or until the write's
// context ends).
type latencyTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *latencyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &latencyConn{Connection: c, s: t.s}, nil
}

type latencyConn struct {
	mcp.Connection
	s *Server
}

func (c *latencyConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok {
		if d := c.s.latencyOf(r.Method); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
	}
	return c.Connection.Write(ctx, m)
}
