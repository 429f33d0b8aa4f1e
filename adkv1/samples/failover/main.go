// Command failover shows a model failover chain at work: Gemini 2.5 Pro as
// the primary, Gemini 2.5 Flash as the fallback, each behind its own breaker.
//
// Offline (the default), both endpoints are fake Gemini REST servers on
// 127.0.0.1 driven through the real genai client and ADK's model/gemini:
// the primary answers, starts failing with 503s, fails over, trips its
// breaker, is probed and answers 429 with a 30s retry hint, is held at
// least that long, recovers and is probed back. Time is a fake clock, so
// the run takes well under a second.
//
// With GOOGLE_API_KEY set (and -offline=false), the same chain calls the
// real Gemini API; since real endpoints do not fail on demand, the sample
// isolates the primary (an operator's switch) to show the failover, then
// resets it.
//
//	go run ./samples/failover          # offline
//	go run ./samples/failover -logs    # also print the structured log lines (stderr)
//	go run ./samples/failover -scenario partial-429   # a partial 429 storm, throttling off and on
//	go run ./samples/failover -scenario storms        # load-independent and load-dependent storms, sustained exhaustion
//	go run ./samples/failover -scenario storms -seeds 200   # every storm over 200 seeds: mean, worst, within target
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

const (
	proModel   = "gemini-2.5-pro"
	flashModel = "gemini-2.5-flash"
)

func main() {
	offline := flag.Bool("offline", os.Getenv("GOOGLE_API_KEY") == "", "use fake endpoints on 127.0.0.1 (default unless GOOGLE_API_KEY is set)")
	showLogs := flag.Bool("logs", false, "print adkbreaker's structured log lines on stderr")
	seeds := flag.Int("seeds", 0, "with -scenario storms: run every storm over seeds 1…n (in process) and print the distribution of the fallback's share instead of the seeded table")
	scenario := flag.String("scenario", "story", "story (an outage, a retry hint, a recovery), partial-429 (a rate-limit storm on a third of the calls, throttling off and on; offline) or storms (both storm shapes at 10, 33 and 50 %, and sustained exhaustion; offline)")
	flag.Parse()
	var logger *slog.Logger
	if *showLogs {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx := context.Background()
	var err error
	switch {
	case *scenario == "partial-429":
		err = runPartial429(ctx)
	case *scenario == "storms":
		err = runStorms(ctx, *seeds)
	case *scenario != "story":
		err = fmt.Errorf("unknown -scenario %q (want story, partial-429 or storms)", *scenario)
	case *offline:
		err = runOffline(ctx, logger)
	default:
		err = runOnline(ctx, logger)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// demo is the chain in an ADK runner, with a timeline printer.
type demo struct {
	clock   registry.Clock
	start   time.Time
	reg     *registry.Registry
	m       *failover.Model
	r       *runner.Runner
	names   map[registry.Key]string
	turns   int
	answers map[string]int
	hops    map[failover.Reason]int
	errs    int
	mu      sync.Mutex
	pending []string // transitions, printed after each turn in order
}

func newDemo(ctx context.Context, clock registry.Clock, chain config.ModelChain, pol func(config.ModelEndpoint) registry.Policy, logger *slog.Logger) (*demo, error) {
	d := &demo{clock: clock, start: clock.Now(), names: map[registry.Key]string{}, answers: map[string]int{}, hops: map[failover.Reason]int{}}
	opts := []registry.Option{registry.WithClock(clock)}
	for _, e := range chain.Endpoints {
		k := registry.Key(e.Identity())
		d.names[k] = e.Model
		opts = append(opts, registry.WithPolicy(k, pol(e)))
	}
	var err error
	if d.reg, err = registry.New(opts...); err != nil {
		return nil, err
	}
	// Breaker state changes, in the order they happened.
	d.reg.Subscribe(func(t registry.Transition) {
		line := fmt.Sprintf("breaker %s: %s → %s (%s)", d.names[t.Key], t.From, t.To, t.Cause)
		line += retryIn(t.RetryAfter)
		d.mu.Lock()
		d.pending = append(d.pending, line)
		d.mu.Unlock()
	})
	// The plugin below logs every transition of d.reg through logger (its
	// default breaker log), the endpoints' included: no LogTransitions here.
	d.m, err = failover.FromConfig(ctx, "assistant", chain, d.reg,
		failover.WithLogger(logger),
		failover.WithOnFailover(func(ctx context.Context, ev failover.Event) {
			d.transitions(ctx) // print the state changes that came first
			d.hops[ev.Reason]++
			to := d.names[ev.To]
			if to == "" {
				to = "nothing left"
			}
			d.print(fmt.Sprintf("  failover %s → %s: %s%s", d.names[ev.From], to, ev.Reason, retryIn(ev.RetryAfter)))
		}))
	if err != nil {
		return nil, err
	}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: d.m, Instruction: "Answer in one short sentence."})
	if err != nil {
		return nil, err
	}
	p, err := breaker.New(breaker.WithRegistry(d.reg), breaker.WithModelGuard(d.m), breaker.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	d.r, err = runner.New(runner.Config{AppName: "failover-sample", Agent: a, SessionService: session.InMemoryService(),
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	return d, err
}

func (d *demo) print(s string) {
	fmt.Printf("t+%-4s %s\n", d.clock.Now().Sub(d.start).Round(time.Second).String(), s)
}

func (d *demo) note(s string) { d.print("── " + s) }

// turn runs one user turn and prints who answered.
func (d *demo) turn(ctx context.Context, q string) {
	d.turns++
	d.print(fmt.Sprintf("turn %d: %q", d.turns, q))
	var answer, endpoint string
	var turnErr error
	for ev, err := range d.r.Run(ctx, "user", "session", genai.NewContentFromText(q, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			turnErr = err
			continue
		}
		if ev.Partial || ev.Content == nil || len(ev.Content.Parts) == 0 {
			continue
		}
		answer = strings.TrimSpace(ev.Content.Parts[0].Text)
		endpoint, _ = ev.CustomMetadata[failover.AttrEndpointModel].(string)
	}
	d.transitions(ctx)
	switch {
	case turnErr != nil:
		d.errs++
		d.print("  error: " + turnErr.Error())
	case endpoint == "":
		d.answers["(plugin: unavailable)"]++
		d.print("  answered by the plugin: " + answer)
	default:
		d.answers[endpoint]++
		d.print(fmt.Sprintf("  answered by %s: %s", endpoint, answer))
	}
}

// transitions prints the breaker state changes delivered so far.
func (d *demo) transitions(ctx context.Context) {
	_ = d.reg.Flush(ctx)
	d.mu.Lock()
	lines := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, l := range lines {
		d.print("  " + l)
	}
}

func (d *demo) summary(primaryHits int64) {
	hops := 0
	var reasons []string
	for _, r := range []failover.Reason{failover.ReasonServerError, failover.ReasonRateLimited, failover.ReasonTimeout,
		failover.ReasonQuotaExhausted, failover.ReasonCircuitOpen} {
		if n := d.hops[r]; n > 0 {
			hops += n
			reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
		}
	}
	hits := ""
	if primaryHits >= 0 {
		hits = fmt.Sprintf(", %d requests reached the primary", primaryHits)
	}
	fmt.Printf("summary: %d turns, %d answered by %s, %d by %s, %d errors; %d failovers (%s)%s; pending outcomes %d\n",
		d.turns, d.answers[proModel], proModel, d.answers[flashModel], flashModel, d.errs, hops, strings.Join(reasons, ", "), hits, d.m.Pending())
}

// fakeGemini is a Gemini API endpoint on 127.0.0.1 whose behaviour the
// sample switches: "ok", "503" or "429".
type fakeGemini struct {
	*httptest.Server
	mode atomic.Value
	hits atomic.Int64
}

func newFakeGemini() *fakeGemini {
	f := &fakeGemini{}
	f.mode.Store("ok")
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		name := strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
		name = name[:strings.IndexByte(name, ':')]
		w.Header().Set("Content-Type", "application/json")
		switch f.mode.Load() {
		case "503":
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
		case "429":
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",`+
				`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`)
		default:
			fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello from %s."}]},"finishReason":"STOP"}],"modelVersion":%q}`, name, name)
		}
	}))
	return f
}

func runOffline(ctx context.Context, logger *slog.Logger) error {
	fmt.Println("offline: two fake Gemini endpoints on 127.0.0.1, real genai client, fake clock")
	pro, flash := newFakeGemini(), newFakeGemini()
	defer pro.Close()
	defer flash.Close()
	os.Setenv("ADKBREAKER_SAMPLE_KEY", "fake-key")
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: proModel, Backend: config.BackendGeminiAPI, BaseURL: pro.URL, APIKeyEnv: "ADKBREAKER_SAMPLE_KEY", Timeout: config.Duration(30 * time.Second)},
		{Model: flashModel, Backend: config.BackendGeminiAPI, BaseURL: flash.URL, APIKeyEnv: "ADKBREAKER_SAMPLE_KEY", Timeout: config.Duration(30 * time.Second)},
	}}
	// A policy that trips quickly, so the story fits in a few turns.
	// Production chains use failover.DefaultPolicy (10 consecutive failures).
	quick := func(config.ModelEndpoint) registry.Policy {
		p := failover.DefaultPolicy()
		p.ConsecutiveFailures, p.DisableFailureRate, p.OpenFor, p.NoJitter = 2, true, 10*time.Second, true
		return p
	}
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	d, err := newDemo(ctx, clk, chain, quick, logger)
	if err != nil {
		return err
	}
	defer d.m.Close()

	d.turn(ctx, "Hi!")
	clk.Advance(5 * time.Second)
	d.note("the primary starts failing: 503 UNAVAILABLE")
	pro.mode.Store("503")
	d.turn(ctx, "Still there?")
	clk.Advance(time.Second)
	d.turn(ctx, "And now?")
	clk.Advance(time.Second)
	before := pro.hits.Load()
	d.turn(ctx, "What about now?")
	d.note(fmt.Sprintf("the open primary received %d requests", pro.hits.Load()-before))
	clk.Advance(10 * time.Second)
	d.note("the primary now answers 429 with RetryInfo retryDelay 30s")
	pro.mode.Store("429")
	d.turn(ctx, "Try again?")
	clk.Advance(20 * time.Second)
	before = pro.hits.Load()
	d.turn(ctx, "Any better?")
	d.note(fmt.Sprintf("20s later: the probe refused with a 30s retry hint holds the primary for the hint, not for its own hold (10s): %d requests reached it", pro.hits.Load()-before))
	clk.Advance(11 * time.Second)
	d.note("the primary recovers")
	pro.mode.Store("ok")
	d.turn(ctx, "Back to normal?")
	clk.Advance(time.Second)
	d.turn(ctx, "Thanks!")
	d.summary(pro.hits.Load())
	return nil
}

func runOnline(ctx context.Context, logger *slog.Logger) error {
	fmt.Printf("online: %s → %s on the Gemini API (GOOGLE_API_KEY)\n", proModel, flashModel)
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{
		{Model: proModel, Backend: config.BackendGeminiAPI, APIKeyEnv: "GOOGLE_API_KEY", Timeout: config.Duration(60 * time.Second)},
		{Model: flashModel, Backend: config.BackendGeminiAPI, APIKeyEnv: "GOOGLE_API_KEY", Timeout: config.Duration(60 * time.Second)},
	}}
	d, err := newDemo(ctx, registry.SystemClock(), chain, failover.PolicyFor, logger)
	if err != nil {
		return err
	}
	defer d.m.Close()
	proKey := registry.Key(chain.Endpoints[0].Identity())
	d.turn(ctx, "In one sentence: what is a circuit breaker in software?")
	d.note("an operator isolates the primary (as if it were down)")
	if err := d.reg.Isolate(proKey); err != nil {
		return err
	}
	d.turn(ctx, "And what is failover?")
	d.note("the operator resets the primary")
	d.reg.Reset(proKey)
	d.turn(ctx, "Thanks, bye!")
	d.summary(-1)
	return nil
}

// retryIn says when a breaker admits calls again: nothing when it does now,
// and no time for an isolated one (registry.UntilReset).
func retryIn(d time.Duration) string {
	switch {
	case d == registry.UntilReset:
		return ", until an operator resets it"
	case d > 0:
		return fmt.Sprintf(", retry in %s", d.Round(time.Second))
	}
	return ""
}
