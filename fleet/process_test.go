package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// These tests run the replicas as separate processes (this test binary,
// re-executed as TestReplicaProcess), sharing a real redis-server, and
// calling a real HTTP backend on 127.0.0.1 that the test serves: the backend
// sees every call that reaches the dependency, with the replica that sent it
// and whether it was a probe.

const childEnv = "ADKBREAKER_FLEET_CHILD"

// TestReplicaProcess is one replica when run as a child process (skipped
// otherwise): it calls the backend in a loop through its breaker, a call
// every millisecond or so, until its standard input closes.
func TestReplicaProcess(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("a replica process of the fleet process tests")
	}
	hold, _ := time.ParseDuration(os.Getenv("CHILD_HOLD"))
	callTimeout, _ := time.ParseDuration(os.Getenv("CHILD_CALL_TIMEOUT"))
	pol := registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true, OpenFor: hold, OpenBackoff: 1,
		NoJitter: true, ProbeLease: 30 * time.Second, CallTimeout: callTimeout}
	reg := registry.MustNew(registry.WithPolicy(dep, pol))
	b, err := reg.Get(dep)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New(reg, fleet.WithAddress(os.Getenv("CHILD_REDIS")), fleet.WithPrefix(os.Getenv("CHILD_PREFIX")),
		fleet.WithReplicaID(os.Getenv("CHILD_NAME")), fleet.WithTimeouts(500*time.Millisecond, 250*time.Millisecond),
		fleet.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err = f.WaitHealthy(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready") // the parent waits for this line
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	client := &http.Client{Timeout: callTimeout}
	for {
		select {
		case <-done:
			return
		default:
		}
		tk, d := b.Admit()
		if !d.Allowed {
			time.Sleep(time.Millisecond) // traffic
			continue
		}
		req, _ := http.NewRequest(http.MethodGet, os.Getenv("CHILD_BACKEND"), nil)
		req.Header.Set("X-Replica", os.Getenv("CHILD_NAME"))
		if tk.Probe() {
			req.Header.Set("X-Probe", "1")
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			tk.Done(registry.Success)
		} else {
			tk.Done(registry.Failure)
		}
	}
}

// backendCall is one call that reached the backend.
type backendCall struct {
	at      time.Time
	replica string
}

// backend is the dependency: every ordinary call fails at once (503);
// probes fail at once too, or hang until their caller gives up (hang).
type backend struct {
	hang bool
	mu   sync.Mutex
	seen []backendCall // probes, in arrival order
	more chan struct{} // signalled on every probe
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Probe") == "1" {
		b.mu.Lock()
		b.seen = append(b.seen, backendCall{at: time.Now(), replica: r.Header.Get("X-Replica")})
		b.mu.Unlock()
		select {
		case b.more <- struct{}{}:
		default:
		}
		if b.hang {
			<-r.Context().Done() // the caller's timeout, or its death
			return
		}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

func (b *backend) probes() []backendCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// child is one replica process.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	output *syncBuffer
}

// syncBuffer is a bytes.Buffer written by the process's output copiers and
// read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startReplicas starts n replica processes against redis at addr and the
// backend at url, and waits until every one is sharing.
func startReplicas(t *testing.T, n int, addr, url string, hold, callTimeout time.Duration) map[string]*child {
	t.Helper()
	prefix := fmt.Sprintf("p%d", time.Now().UnixNano())
	out := map[string]*child{}
	for i := range n {
		c := &child{name: fmt.Sprintf("r%d", i), output: &syncBuffer{}}
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestReplicaProcess$", "-test.count=1")
		c.cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_REDIS="+addr, "CHILD_PREFIX="+prefix, "CHILD_NAME="+c.name,
			"CHILD_BACKEND="+url, "CHILD_HOLD="+hold.String(), "CHILD_CALL_TIMEOUT="+callTimeout.String())
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.cmd.Stderr = c.output
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan error, 1)
		go func() {
			buf := make([]byte, 0, 64)
			one := make([]byte, 1)
			for {
				if _, err := stdout.Read(one); err != nil {
					ready <- fmt.Errorf("%s exited before it was ready: %v", c.name, err)
					return
				}
				buf = append(buf, one[0])
				if bytes.Contains(buf, []byte("ready\n")) {
					ready <- nil
					_, _ = io.Copy(c.output, stdout)
					return
				}
			}
		}()
		t.Cleanup(func() {
			_ = c.stdin.Close()
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
			if t.Failed() {
				t.Logf("%s output:\n%s", c.name, c.output.String())
			}
		})
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not ready within 30s", c.name)
		}
		out[c.name] = c
	}
	return out
}

// TestProcessesKilledProbeHolder: three replica processes; the backend
// hangs its probes. The replica whose probe arrives first is killed with
// SIGKILL mid-probe: its lease stays in Redis, unreleased. The next probe,
// from another replica, comes once that lease has expired: within the
// probe's call timeout plus 1s of the first (the lease is the probe's
// timeout, renewed when the probe started), and not before the lease
// expired.
func TestProcessesKilledProbeHolder(t *testing.T) {
	srv := redisServer(t)
	be := &backend{hang: true, more: make(chan struct{}, 1)}
	hs := httptest.NewServer(be)
	t.Cleanup(hs.Close)
	// The victim must be killed while its probe still hangs: the call
	// timeout leaves the test 3s to do it even on a loaded machine (with 1s,
	// a run under load killed the victim after its probe had timed out and
	// it had probed again).
	const callTimeout = 3 * time.Second
	kids := startReplicas(t, 3, srv.Addr(), hs.URL, 200*time.Millisecond, callTimeout)
	first := waitProbes(t, be, 1, 20*time.Second)[0]
	victim := kids[first.replica]
	if err := victim.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup, the lease is left in Redis
		t.Fatal(err)
	}
	if late := time.Since(first.at); late > callTimeout/2 {
		t.Fatalf("the victim was killed %v after its probe, too late to judge the lease (call timeout %v)", late.Round(time.Millisecond), callTimeout)
	}
	all := waitProbes(t, be, 2, 10*time.Second)
	next := all[1]
	gap := next.at.Sub(first.at)
	t.Logf("%s probed, was killed; %s probed %v later", first.replica, next.replica, gap.Round(time.Millisecond))
	if next.replica == first.replica {
		t.Fatalf("the killed replica %s probed again", first.replica)
	}
	if gap > callTimeout+time.Second {
		t.Errorf("the next probe came %v after the holder's, want ≤ the call timeout (%v) + 1s", gap, callTimeout)
	}
	if gap < callTimeout*3/4 {
		t.Errorf("the next probe came %v after the holder's, before its lease (%v) could expire", gap, callTimeout)
	}
}

// waitProbes waits until the backend has seen n probes and returns them.
func waitProbes(t *testing.T, be *backend, n int, d time.Duration) []backendCall {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		if ps := be.probes(); len(ps) >= n {
			return ps
		}
		select {
		case <-be.more:
		case <-deadline.C:
			t.Fatalf("%d probes within %v, want %d", len(be.probes()), d, n)
		}
	}
}

// TestProcessesOneProbePerHold: three replica processes, a dependency that
// is down: every probe fails and starts the next hold (20ms) everywhere.
// Over 1,000 holds the backend never sees two probes in one hold — two
// probes closer than half a hold, since the next hold starts only when a
// probe has failed.
func TestProcessesOneProbePerHold(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 holds across three processes")
	}
	srv := redisServer(t)
	be := &backend{more: make(chan struct{}, 1)}
	hs := httptest.NewServer(be)
	t.Cleanup(hs.Close)
	const hold = 20 * time.Millisecond
	startReplicas(t, 3, srv.Addr(), hs.URL, hold, time.Second)
	start := time.Now()
	ps := waitProbes(t, be, 1000, 3*time.Minute)[:1000]
	took := time.Since(start)
	bad := 0
	by := map[string]int{}
	for i, p := range ps {
		by[p.replica]++
		if i > 0 && p.at.Sub(ps[i-1].at) < hold/2 {
			bad++
			if bad <= 5 {
				t.Errorf("probes %d (%s) and %d (%s) %v apart: two in one hold", i-1, ps[i-1].replica, i, p.replica, p.at.Sub(ps[i-1].at))
			}
		}
	}
	t.Logf("1000 holds in %v: probes by replica %v; %d holds with more than one probe", took.Round(time.Millisecond), by, bad)
	if len(by) < 2 {
		t.Errorf("probes by replica %v: one replica probed every hold, so the test shows nothing about the lease", by)
	}
}
