// Package redistest starts real redis-server processes on loopback for
// tests and samples, and provides a blackhole listener (accepts TCP
// connections and never answers) to simulate a hung Redis.
//
// Tests call New: when redis-server is not installed it fails the test under
// CI=true and skips it otherwise, with a message saying how to install it.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Binary is the redis-server executable looked up on PATH (and in /usr/bin,
// /usr/local/bin, where Debian and source installs put it).
const Binary = "redis-server"

// ErrNotInstalled is returned by Start when no redis-server is found.
var ErrNotInstalled = errors.New("redis-server not found on PATH (Debian/Ubuntu: apt-get install -y redis-server)")

// Path returns the redis-server executable, or ErrNotInstalled.
func Path() (string, error) {
	if p, err := exec.LookPath(Binary); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/" + Binary, "/usr/local/bin/" + Binary} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

// Server is one redis-server process on 127.0.0.1. It can be killed and
// restarted on the same port.
type Server struct {
	path     string
	port     int
	password string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Options configure Start.
type Options struct {
	// Password, if set, is required of clients (requirepass).
	Password string
}

// Start starts redis-server on a free loopback port and waits until it
// answers PING.
func Start(o Options) (*Server, error) {
	path, err := Path()
	if err != nil {
		return nil, err
	}
	var last error
	for range 5 { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{path: path, port: port, password: o.Password}
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// New starts a server for t and stops it at cleanup. Without redis-server it
// fails t when the environment has CI=true and skips t otherwise.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if errors.Is(err, ErrNotInstalled) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v; CI requires it (.ci/run installs it)", err)
		}
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *Server) start() error {
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--loglevel", "warning", "--logfile", "",
	}
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
	cmd := exec.Command(s.path, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redistest: redis-server on port %d exited: %v", s.port, err)
		default:
		}
		if s.ping() {
			s.mu.Lock()
			s.cmd = cmd
			s.mu.Unlock()
			go func() { <-exited }() // reap later
			return nil
		}
		time.Sleep(10 * time.Millisecond) // polling a child process, not test state
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("redistest: redis-server on port %d did not answer within 10s", s.port)
}

// ping reports whether the server answers PING (or asks for a password).
func (s *Server) ping() bool {
	c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (line == "+PONG\r\n" || len(line) > 0 && line[0] == '-')
}

// Kill stops the server abruptly (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	for range 200 { // until the port is free
		c, err := net.DialTimeout("tcp", s.Addr(), 50*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
}

// Restart starts a fresh, empty server on the same port (after Kill).
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

// Stop kills the server; it is idempotent.
func (s *Server) Stop() { s.Kill() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Blackhole is a TCP listener on loopback that accepts connections and
// never answers: a hung Redis, or a network that drops replies.
type Blackhole struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// NewBlackhole listens on a free loopback port.
func NewBlackhole() (*Blackhole, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Blackhole{l: l, done: make(chan struct{})}
	go b.accept()
	return b, nil
}

func (b *Blackhole) accept() {
	defer close(b.done)
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c) // held open, never read or written
		b.mu.Unlock()
	}
}

// Addr returns the listener's address.
func (b *Blackhole) Addr() string { return b.l.Addr().String() }

// Accepted returns how many connections were accepted.
func (b *Blackhole) Accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// Close stops listening and closes every accepted connection.
func (b *Blackhole) Close() {
	_ = b.l.Close()
	<-b.done
	b.mu.Lock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
}

// Proxy forwards loopback TCP connections to a target (a Server) and can
// turn into a blackhole: connections stay open, bytes stop flowing both ways,
// and new connections are accepted and never answered.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	hole  bool
	conns map[net.Conn]struct{}
	done  chan struct{}
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// SetBlackhole switches the blackhole on or off. Switching it off closes the
// connections that were held silent, so clients reconnect.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	p.hole = on
	var old []net.Conn
	if !on {
		for c := range p.conns {
			old = append(old, c)
		}
		clear(p.conns)
	}
	p.mu.Unlock()
	for _, c := range old {
		_ = c.Close()
	}
}

func (p *Proxy) accept() {
	defer close(p.done)
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		hole := p.hole
		p.mu.Unlock()
		if hole {
			continue // held open, never answered
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				hole := p.hole
				p.mu.Unlock()
				if hole {
					continue // swallowed
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		p.mu.Lock()
		hole := p.hole
		p.mu.Unlock()
		if !hole {
			p.drop(c)
			p.drop(up)
		}
	}
	go pipe(up, c)
	pipe(c, up)
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	_ = p.l.Close()
	<-p.done
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
}
