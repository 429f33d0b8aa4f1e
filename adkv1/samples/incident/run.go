package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/plugin/retryandreflect"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The reference incident: a third-party enrichment API behind one tool.
const (
	dependency     = "enrichment-api"
	simulated      = 15 * time.Minute
	turnEvery      = 100 * time.Millisecond
	outageFrom     = 3 * time.Minute
	outageTo       = 12 * time.Minute
	healthyLatency = 50 * time.Millisecond // the default of -healthy
	callTimeout    = 5 * time.Second       // the tool's client timeout (hang mode waits for it)
	fastFailure    = 20 * time.Millisecond // mode fast: 503 after this
	modelRetries   = 3                     // the model retries a failed tool up to this many times per turn
	bucket         = 10 * time.Second      // chart resolution
)

// variant is one way of running the same agent on the same traffic.
type variant struct {
	name string
	// plugins returns the runner's plugins, built on the simulation's clock;
	// reg is the registry whose breaker the dependency reports probes of
	// (nil: no breaker).
	plugins func(s *sim) (ps []*adkplugin.Plugin, reg *registry.Registry, err error)
	// guard, when set, wraps the enrich tool's call in a breaker of the
	// tool's own (the baselines of -scenario baselines, baselines.go).
	guard func(s *sim) toolGuard
}

// incidentPolicy is the incident's breaker: "50% error rate over a 20-call window,
// 30-second cool-down, 5-second tool timeout, bulkhead of 20 concurrent
// calls", the rate gate alone. Everything else — the probe schedule
// (growing holds from the 30 s cool-down, capped at 1 minute, with jitter)
// and the in-flight slowness detector among it — is the library's default.
func incidentPolicy() registry.Policy {
	return registry.Policy{
		FailureRate:                0.5,
		CountWindow:                20,
		MinCalls:                   20,
		DisableConsecutiveFailures: true,
		OpenFor:                    30 * time.Second,
		CallTimeout:                callTimeout,
		MaxConcurrent:              20,
	}
}

var variants = []variant{
	{name: "none", plugins: func(*sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }},
	{name: "retryandreflect", plugins: func(*sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		p, err := retryandreflect.New() // default options: 3 retries per tool per invocation
		return []*adkplugin.Plugin{p}, nil, err
	}},
	{name: "adkbreaker", plugins: func(s *sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return adkbreakerPlugin(s, incidentPolicy())
	}},
	{name: "adkbreaker-defaults", plugins: func(s *sim) ([]*adkplugin.Plugin, *registry.Registry, error) {
		return adkbreakerPlugin(s, registry.Policy{}) // no tuning at all
	}},
}

func adkbreakerPlugin(s *sim, p registry.Policy) ([]*adkplugin.Plugin, *registry.Registry, error) {
	reg, err := registry.New(registry.WithClock(s), registry.WithRand(seededRand()), registry.WithPolicy(dependency, p))
	if err != nil {
		return nil, nil, err
	}
	pl, err := breaker.New(breaker.WithRegistry(reg), breaker.WithDependency(dependency, "enrich"))
	return []*adkplugin.Plugin{pl}, reg, err
}

// seededRand is the jitter source: fixed, so that every run prints the same
// numbers.
func seededRand() func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(2, 12))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// result is what one variant did.
type result struct {
	variant string
	turns   []turnStats
	dep     depStats
	// llmOutage counts model calls made while the dependency was down.
	llmOutage int
	// tokensOutage counts the tokens of those calls (tokens.go).
	tokensOutage int
}

// turnStats is one user turn.
type turnStats struct {
	start, end time.Duration // virtual, from the simulation's start
	llmCalls   int
	tokens     int // prompt + response tokens of the turn's model calls (tokens.go)
	outcome    outcome
}

type outcome int

const (
	useful   outcome = iota // answered with the enrichment
	degraded                // answered without it, having been told it is unavailable
	failed                  // gave up after errors, or the run failed
)

type turnKey struct{}

// depStats is what the dependency saw.
type depStats struct {
	calls      int       // every call that reached it
	deadCalls  int       // calls that arrived while it was down (probes included)
	preTrip    int       // of those, the calls that arrived while its breaker was closed
	probes     int       // calls that arrived while its breaker was half-open
	healthHits int       // health checks (none in this version of the sample)
	inflight   int       // now
	peak       int       // most calls in flight at once
	firstOK    time.Time // first successful call after the outage ended
	perBucket  []int     // calls per 10 s
}

// dependencySim is the enrichment API: healthy (50 ms, or -healthy), or down from minute 3
// to minute 12, when it either hangs until the caller's 5 s timeout (mode
// hang) or answers 503 in 20 ms (mode fast).
type dependencySim struct {
	s       *sim
	mode    string
	healthy time.Duration // latency when up
	reg     *registry.Registry
	// state, when set, reports the state of a breaker that is not the
	// registry's (a baseline's, baselines.go).
	state func() registry.State
	mu    sync.Mutex
	st    depStats
}

func (d *dependencySim) call(context.Context) (map[string]any, error) {
	at := d.s.Since()
	down := at >= outageFrom && at < outageTo
	d.mu.Lock()
	d.st.calls++
	d.st.perBucket[min(int(at/bucket), len(d.st.perBucket)-1)]++
	state := registry.StateClosed // no breaker: every call is a closed one
	if d.reg != nil {
		if b, ok := d.reg.Lookup(dependency); ok {
			state = b.State()
		}
	}
	if d.state != nil {
		state = d.state()
	}
	if state == registry.StateHalfOpen {
		d.st.probes++
	}
	if down {
		d.st.deadCalls++
		if state == registry.StateClosed {
			d.st.preTrip++
		}
	}
	d.st.inflight++
	d.st.peak = max(d.st.peak, d.st.inflight)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.st.inflight--
		d.mu.Unlock()
	}()
	switch {
	case !down:
		d.s.Sleep(d.healthy)
		d.mu.Lock()
		if at >= outageTo && d.st.firstOK.IsZero() {
			d.st.firstOK = epoch.Add(at)
		}
		d.mu.Unlock()
		return map[string]any{"company": "ACME GmbH", "employees": 420, "industry": "logistics"}, nil
	case d.mode == "hang":
		d.s.Sleep(callTimeout)
		return nil, fmt.Errorf("enrichment: no answer within %s: %w", callTimeout, context.DeadlineExceeded)
	default:
		d.s.Sleep(fastFailure)
		return nil, &callbacks.StatusError{Code: http.StatusServiceUnavailable}
	}
}

// analyst is the scripted model: it calls enrich once per turn, retries a
// failure up to three times, and stops early only when told firmly not to
// retry — adkbreaker's payload (retry.advised is false) or retryandreflect's
// "do not attempt to use the tool again". Model calls take no virtual time.
type analyst struct {
	s   *sim
	res *result
	mu  *sync.Mutex
}

func (analyst) Name() string { return "scripted-analyst" }

func (m analyst) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		ts, _ := ctx.Value(turnKey{}).(*turnStats)
		if ts != nil {
			ts.llmCalls++
		}
		if at := m.s.Since(); at >= outageFrom && at < outageTo {
			m.mu.Lock()
			m.res.llmOutage++
			m.mu.Unlock()
		}
		var responses []map[string]any
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					responses = append(responses, p.FunctionResponse.Response)
				}
			}
		}
		text, o := decide(responses)
		if text == "" {
			yield(m.bill(ctx, req, &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				genai.NewPartFromFunctionCall("enrich", map[string]any{"company": "ACME"})}}}), nil)
			return
		}
		if ts != nil {
			ts.outcome = o
		}
		yield(m.bill(ctx, req, &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), TurnComplete: true}), nil)
	}
}

// decide is the model's reasoning: "" means call the tool (again).
func decide(responses []map[string]any) (string, outcome) {
	if len(responses) == 0 {
		return "", useful
	}
	last := responses[len(responses)-1]
	switch {
	case last["company"] != nil:
		return "ACME GmbH: logistics, 420 employees.", useful
	case isPayload(last):
		// retry.advised is false: the firm "do not retry".
		return "Live enrichment is unavailable right now; here is the profile without it.", degraded
	case strings.Contains(fmt.Sprint(last["reflection_guidance"]), "Do not attempt to use"):
		return "Sorry, I could not enrich this profile.", failed
	case len(responses) <= modelRetries:
		return "", useful // a failure: try again
	}
	return "Sorry, I could not enrich this profile.", failed
}

// isPayload reports whether m is adkbreaker's unavailable payload; Parse
// accepts only payloads whose retry.advised is false.
func isPayload(m map[string]any) bool {
	_, ok := degrade.Parse(m)
	return ok
}

// run plays the incident once for one variant, the dependency answering in
// healthy when it is up, a new user turn every 100 ms.
func run(mode string, healthy time.Duration, v variant) (*result, error) {
	return runEvery(mode, healthy, turnEvery, v)
}

// runEvery is run with a new user turn every `every`.
func runEvery(mode string, healthy, every time.Duration, v variant) (*result, error) {
	s := newSim()
	plugins, reg, err := v.plugins(s)
	if err != nil {
		return nil, err
	}
	res := &result{variant: v.name}
	dep := &dependencySim{s: s, mode: mode, healthy: healthy, reg: reg, st: depStats{perBucket: make([]int, int(simulated/bucket))}}
	call := guarded(s, v, dep)
	var mu sync.Mutex
	type enrichArgs struct {
		Company string `json:"company"`
	}
	enrich, err := functiontool.New(functiontool.Config{Name: "enrich", Description: "Enrich a company profile from the third-party API."},
		func(ctx agent.ToolContext, _ enrichArgs) (map[string]any, error) { return call(ctx) })
	if err != nil {
		return nil, err
	}
	a, err := llmagent.New(llmagent.Config{Name: "analyst", Model: analyst{s: s, res: res, mu: &mu}, Tools: []tool.Tool{enrich}})
	if err != nil {
		return nil, err
	}
	if err := replay(s, a, plugins, every, res); err != nil {
		return nil, err
	}
	res.dep = dep.st
	return res, nil
}

// replay runs root on ADK's runner with plugins, a new user turn every
// `every` for the simulated time (the traffic), recording each turn in
// res.turns, until the simulation ends.
func replay(s *sim, root agent.Agent, plugins []*adkplugin.Plugin, every time.Duration, res *result) error {
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "incident", Agent: root, SessionService: svc, AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		return err
	}
	n := int(simulated / every)
	res.turns = make([]turnStats, n)
	s.Go(func() {
		for i := range n {
			s.Go(func() { turn(s, r, svc, i, &res.turns[i]) })
			s.Sleep(every)
		}
	})
	s.Run()
	return nil
}

func turn(s *sim, r *runner.Runner, svc session.Service, i int, ts *turnStats) {
	ts.start = s.Since()
	ctx := context.WithValue(context.Background(), turnKey{}, ts)
	sid := fmt.Sprintf("t%d", i)
	ts.outcome = failed
	for ev, err := range r.Run(ctx, "user", sid, genai.NewContentFromText("Enrich ACME's profile.", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			ts.outcome = failed
			break
		}
		if m, ok := ev.CustomMetadata["adkbreaker"].(map[string]any); ok && m["ended_turn"] == true {
			ts.outcome = degraded // the plugin answered: what is unavailable, when to retry
		}
	}
	ts.end = s.Since()
	_ = svc.Delete(context.Background(), &session.DeleteRequest{AppName: "incident", UserID: "user", SessionID: sid})
}

// errUnknownMode is returned for a -mode other than hang or fast.
var errUnknownMode = errors.New(`-mode must be "hang" or "fast"`)

// errHealthy is returned for a -healthy outside (0, the call timeout).
var errHealthy = fmt.Errorf("-healthy must be above 0 and below the call timeout (%s)", callTimeout)

// runAll plays the incident for the variants vs, in parallel (each has its
// own virtual clock; results do not depend on scheduling).
func runAll(mode string, healthy time.Duration, vs []variant) ([]*result, error) {
	if mode != "hang" && mode != "fast" {
		return nil, errUnknownMode
	}
	if healthy <= 0 || healthy >= callTimeout {
		return nil, errHealthy
	}
	out := make([]*result, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Go(func() { out[i], errs[i] = run(mode, healthy, v) })
	}
	wg.Wait()
	return out, errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...)
}
