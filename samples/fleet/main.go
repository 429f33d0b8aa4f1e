// Command fleet runs three replicas of an agent's tool path as three
// separate processes, each with its own registry and Redis client, sharing
// trips and probes through one redis-server, against one flaky backend on
// loopback. It replays the reference incident (docs/incident.md) at 1/100 of its time scale: the
// backend goes down, the breakers trip (50% failures over 20 calls, counted
// over the whole fleet: the replicas share their outcome counts), the
// fleet sends one probe per 300 ms cool-down (30 s in the seed) until the
// backend recovers, and every replica closes with the probe that succeeded.
//
//	go run ./samples/fleet                    # starts its own redis-server (must be on PATH)
//	go run ./samples/fleet -redis host:6379   # an existing Redis (password: REDIS_PASSWORD)
//	go run ./samples/fleet -alone             # the same replicas without sharing, to compare
//
// It prints a timeline and ends with one line:
//
//	summary: replicas=3 dead_calls=N trips_received=T probes_per_hold=P propagation_p99_ms=L
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/internal/redistest"
	"github.com/adkbreaker/adkbreaker/registry"
)

const (
	replicas = 3
	dep      = registry.Key("enrichment-api")
	// The incident at 1/100: one call every 2 s (every 20 ms), spread over the
	// replicas; a 30 s cool-down (300 ms); a 5 s tool timeout (50 ms).
	callEvery = 3 * 20 * time.Millisecond // per replica
	coolDown  = 300 * time.Millisecond
	timeout   = 50 * time.Millisecond
	healthy1  = 500 * time.Millisecond // backend up, then…
	outage    = 18 * coolDown          // …down for 18 cool-downs (the seed's nine minutes), then up
	healthy2  = 700 * time.Millisecond
)

// event is one line a replica writes on stdout for the parent.
type event struct {
	At      int64  `json:"at"` // unix nanoseconds (one host: one clock)
	Replica string `json:"replica"`
	Kind    string `json:"kind"` // transition | call | stats
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Probe   bool   `json:"probe,omitempty"`
	OK      bool   `json:"ok,omitempty"`
	// stats
	Published, Received, LeasesWon    uint64 `json:",omitempty"`
	OutcomesPublished, FleetRateTrips uint64 `json:",omitempty"`
}

func main() {
	redisAddr := flag.String("redis", "", "Redis host:port (default: start a redis-server on loopback)")
	alone := flag.Bool("alone", false, "replicas break on their own (no Redis), for comparison")
	replica := flag.String("replica", "", "internal: run as this replica")
	backend := flag.String("backend", "", "internal: the backend's URL")
	prefix := flag.String("prefix", "", "internal: the fleet's key prefix")
	runFor := flag.Duration("run", 0, "internal: how long the replica runs")
	flag.Parse()
	if *replica != "" {
		if err := runReplica(*replica, *redisAddr, *backend, *prefix, *runFor); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*redisAddr, *alone); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// ---- the parent: Redis, backend, three replica processes, the timeline ----

type backendState struct {
	down     atomic.Bool
	downHits atomic.Int64
	mu       sync.Mutex
	probes   []time.Time // probe calls that reached the backend while down
}

func run(redisAddr string, alone bool) error {
	if redisAddr == "" && !alone {
		srv, err := redistest.Start(redistest.Options{})
		if err != nil {
			return fmt.Errorf("%w; or pass -redis host:port", err)
		}
		defer srv.Stop()
		redisAddr = srv.Addr()
		fmt.Printf("redis-server started on %s\n", redisAddr)
	}
	be := &backendState{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if be.down.Load() {
			be.downHits.Add(1)
			if r.Header.Get("X-Probe") == "1" {
				be.mu.Lock()
				be.probes = append(be.probes, time.Now())
				be.mu.Unlock()
			}
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	})}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("sample-fleet-%d", time.Now().UnixNano())
	total := healthy1 + outage + healthy2
	start := time.Now()
	events := make(chan event, 4096)
	var wg sync.WaitGroup
	for i := range replicas {
		name := fmt.Sprintf("replica-%d", i+1)
		args := []string{"-replica", name, "-backend", "http://" + ln.Addr().String(), "-prefix", prefix, "-run", total.String()}
		if !alone {
			args = append(args, "-redis", redisAddr)
		}
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var e event
				if json.Unmarshal(sc.Bytes(), &e) == nil {
					events <- e
				}
			}
			_ = cmd.Wait()
		}()
	}
	var downAt, upAt time.Time
	go func() {
		time.Sleep(healthy1)
		downAt = time.Now()
		be.down.Store(true)
		time.Sleep(outage)
		upAt = time.Now()
		be.down.Store(false)
	}()
	go func() { wg.Wait(); close(events) }()
	var all []event
	for e := range events {
		all = append(all, e)
	}
	return report(all, be, start, downAt, upAt, alone)
}

func report(all []event, be *backendState, start, downAt, upAt time.Time, alone bool) error {
	slices.SortFunc(all, func(a, b event) int { return int(a.At - b.At) })
	rel := func(ns int64) string { return fmt.Sprintf("+%6.3fs", time.Unix(0, ns).Sub(start).Seconds()) }
	fmt.Printf("%s backend down\n", rel(downAt.UnixNano()))
	var lastTrip int64
	var prop []time.Duration
	tripsReceived := 0
	printedUp := false
	for _, e := range all {
		if !printedUp && !upAt.IsZero() && e.At >= upAt.UnixNano() {
			fmt.Printf("%s backend recovered\n", rel(upAt.UnixNano()))
			printedUp = true
		}
		switch e.Kind {
		case "transition":
			note := ""
			switch e.Cause {
			case "fleet_open":
				tripsReceived++
				if lastTrip > 0 {
					d := time.Duration(e.At - lastTrip)
					prop = append(prop, d)
					note = fmt.Sprintf("   (%.1f ms after the trip)", float64(d)/1e6)
				}
			case "trip", "fleet_rate", "probe_failed", "lease_expired":
				lastTrip = e.At
			}
			if e.Cause == "hold_expired" {
				continue // every replica, every hold: too chatty
			}
			fmt.Printf("%s %s %s → %s (%s)%s\n", rel(e.At), e.Replica, e.From, e.To, e.Cause, note)
		case "call":
			if e.Probe {
				result := "failed"
				if e.OK {
					result = "succeeded"
				}
				fmt.Printf("%s %s probe %s\n", rel(e.At), e.Replica, result)
			}
		case "stats":
			fmt.Printf("%s published=%d received=%d leases_won=%d outcome_messages=%d fleet_rate_trips=%d\n",
				e.Replica, e.Published, e.Received, e.LeasesWon, e.OutcomesPublished, e.FleetRateTrips)
		}
	}
	// Probes grouped by hold: probes closer together than half a cool-down
	// belong to the same hold.
	be.mu.Lock()
	probes := be.probes
	be.mu.Unlock()
	holds := 0
	for i, p := range probes {
		if i == 0 || p.Sub(probes[i-1]) > coolDown/2 {
			holds++
		}
	}
	perHold := 0.0
	if holds > 0 {
		perHold = float64(len(probes)) / float64(holds)
	}
	p99 := 0.0
	if len(prop) > 0 {
		slices.Sort(prop)
		p99 = float64(prop[max(0, (len(prop)*99+99)/100-1)]) / 1e6
	}
	mode := "shared through Redis"
	if alone {
		mode = "alone (no sharing)"
	}
	fmt.Printf("replicas %s; calls to the backend while it was down: %d (%d probes over %d holds)\n", mode, be.downHits.Load(), len(probes), holds)
	fmt.Printf("summary: replicas=%d dead_calls=%d trips_received=%d probes_per_hold=%.2f propagation_p99_ms=%.1f\n",
		replicas, be.downHits.Load(), tripsReceived, perHold, p99)
	return nil
}

// ---- a replica: its own registry, Redis client and traffic ----

func runReplica(name, redisAddr, backend, prefix string, runFor time.Duration) error {
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	emit := func(e event) {
		e.Replica = name
		if e.At == 0 {
			e.At = time.Now().UnixNano()
		}
		outMu.Lock()
		_ = out.Encode(e)
		outMu.Unlock()
	}
	reg := registry.MustNew(registry.WithPolicy(dep, registry.Policy{
		FailureRate: 0.5, MinCalls: 20, Window: time.Minute, ConsecutiveFailures: 1 << 20,
		OpenFor: coolDown, OpenBackoff: 1, NoJitter: true, ProbeLease: timeout,
	}))
	reg.Subscribe(func(t registry.Transition) {
		emit(event{At: t.At.UnixNano(), Kind: "transition", From: t.From.String(), To: t.To.String(), Cause: t.Cause.String()})
	})
	b, err := reg.Get(dep)
	if err != nil {
		return err
	}
	var f *fleet.Fleet
	if redisAddr != "" {
		opts := []fleet.Option{fleet.WithAddress(redisAddr), fleet.WithPrefix(prefix), fleet.WithReplicaID(name),
			fleet.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))}
		if pw := os.Getenv("REDIS_PASSWORD"); pw != "" {
			opts = append(opts, fleet.WithCredentials(os.Getenv("REDIS_USERNAME"), pw))
		}
		f, err = fleet.New(reg, opts...)
		if err != nil {
			return err
		}
		defer f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.WaitHealthy(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("redis at %s not reachable: %w", redisAddr, err)
		}
	}
	client := &http.Client{Timeout: timeout}
	deadline := time.Now().Add(runFor)
	offset, _ := strconv.Atoi(name[len(name)-1:])
	time.Sleep(time.Duration(offset) * callEvery / replicas) // spread the replicas' calls
	for time.Now().Before(deadline) {
		tk, d := b.Admit()
		if d.Allowed {
			probe := tk.Probe()
			req, _ := http.NewRequest(http.MethodGet, backend+"/enrich", nil)
			if probe {
				req.Header.Set("X-Probe", "1")
			}
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				resp.Body.Close()
			}
			if ok {
				tk.Done(registry.Success)
			} else {
				tk.Done(registry.Failure)
			}
			if probe {
				emit(event{Kind: "call", Probe: true, OK: ok})
			}
		}
		time.Sleep(callEvery)
	}
	_ = reg.Flush(context.Background())
	if f != nil {
		s := f.Stats()
		emit(event{Kind: "stats", Published: s.Published, Received: s.Received, LeasesWon: s.LeasesWon,
			OutcomesPublished: s.OutcomesPublished, FleetRateTrips: s.FleetRateTrips})
	}
	return nil
}
