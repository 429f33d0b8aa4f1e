package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// Storms scenario: both shapes of a partial 429 storm at 10 %, 33 % and
// 50 %, with the default policies and with the throttle, then sustained
// exhaustion. The endpoints are fake Gemini REST handlers called through
// the real genai client and ADK's model/gemini (built by FromConfig), over
// an in-process transport (no sockets: 100,000 calls take seconds), on a
// fake clock.
const (
	stormRate     = 30               // calls a second offered to the chain
	stormBefore   = 30 * time.Second // healthy traffic before the storm
	stormFor      = 3 * time.Minute  // the storm
	stormAfter    = 30 * time.Second // measured after the storm ends
	stormHint     = "30s"            // RetryInfo of every 429
	exhaustedHint = 40 * time.Second
)

// stormShape is how a storm decides which calls to refuse.
type stormShape int

const (
	// loadIndependent refuses every call with the same probability,
	// whatever the load: a shared quota, other tenants, regional capacity.
	loadIndependent stormShape = iota
	// loadDependent accepts (1 − share) of the offered rate (a token bucket
	// with a burst of 5): shedding calls leaves more for the others.
	loadDependent
)

func (s stormShape) String() string {
	if s == loadDependent {
		return "load-dependent"
	}
	return "load-independent"
}

// stormGemini is a fake Gemini endpoint whose refusals follow decide, on
// the fake clock.
type stormGemini struct {
	clock        registry.Clock
	mu           sync.Mutex
	decide       func(now time.Time) bool // true: answer 429
	hint         string
	hits, refuse int
}

func (f *stormGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	name := strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	no, hint := f.answer()
	w.Header().Set("Content-Type", "application/json")
	if no {
		w.WriteHeader(429)
		fmt.Fprintf(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}]}}`, hint)
		return
	}
	fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello from %s."}]},"finishReason":"STOP"}],"modelVersion":%q}`, name, name)
}

// answer counts a call and decides it: refused (with the hint to send) or
// answered.
func (f *stormGemini) answer() (refused bool, hint string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits++
	refused = f.decide != nil && f.decide(f.clock.Now())
	if refused {
		f.refuse++
	}
	return refused, f.hint
}

func (f *stormGemini) set(decide func(time.Time) bool) {
	f.mu.Lock()
	f.decide = decide
	f.mu.Unlock()
}

func (f *stormGemini) counts() (hits, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits, f.refuse
}

// memTransport serves each host's handler in process.
type memTransport map[string]http.Handler

func (t memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, ok := t[r.URL.Host]
	if !ok {
		return nil, fmt.Errorf("no fake endpoint at %s", r.URL.Host)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if r.Body != nil {
		r.Body.Close()
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// stormChain is a primary and a fallback on a fake clock.
type stormChain struct {
	clk        *registrytest.FakeClock
	pro, flash *stormGemini
	m          *failover.Model
	br         *registry.Breaker
	mu         sync.Mutex
	shed       int
	opened     time.Time // when the primary's breaker was first seen open (zero: never)
}

// stormBackend is how a storm chain reaches its fake endpoints.
type stormBackend int

const (
	// viaGenai: the real genai client and model/gemini (built by
	// FromConfig) over an in-process HTTP transport; what the table shows.
	viaGenai stormBackend = iota
	// inProcess: model.LLMs that fail as model/gemini does on a 429 with
	// RetryInfo (a genai.APIError), built with failover.New: the same
	// failover, breaker, throttle and exhaustion code on the same answers,
	// about 20 times faster, for running a storm over many seeds.
	inProcess
)

// stormLLM serves a fake endpoint's answers in process.
type stormLLM struct {
	name string
	g    *stormGemini
}

func (s *stormLLM) Name() string { return s.name }

func (s *stormLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if no, hint := s.g.answer(); no {
			yield(nil, genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota).",
				Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": hint}}})
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("Hello from "+s.name+".", genai.RoleModel), TurnComplete: true}, nil)
	}
}

func newStormChain(ctx context.Context, backend stormBackend, throttle bool, seed uint64) (*stormChain, error) {
	c := &stormChain{clk: registrytest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}
	c.pro = &stormGemini{clock: c.clk, hint: stormHint}
	c.flash = &stormGemini{clock: c.clk, hint: stormHint}
	os.Setenv("ADKBREAKER_SAMPLE_KEY", "fake-key")
	ep := config.ModelEndpoint{Model: proModel, Backend: config.BackendGeminiAPI, BaseURL: "http://127.0.0.1:1", APIKeyEnv: "ADKBREAKER_SAMPLE_KEY"}
	if throttle {
		ep.Throttle = &config.Throttle{} // the defaults
	}
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{ep,
		{Model: flashModel, Backend: config.BackendGeminiAPI, BaseURL: "http://127.0.0.1:2", APIKeyEnv: "ADKBREAKER_SAMPLE_KEY"}}}
	f := &config.File{Version: 1, Models: map[string]config.ModelChain{"assistant": chain}}
	reg, err := registry.New(append(failover.RegistryOptions(f), registry.WithClock(c.clk))...)
	if err != nil {
		return nil, err
	}
	opts := []failover.Option{
		failover.WithLogger(slog.New(slog.DiscardHandler)),
		failover.WithThrottleRandom(rand.New(rand.NewPCG(seed, 1)).Float64),
		failover.WithOnFailover(func(_ context.Context, ev failover.Event) {
			if ev.Reason == failover.ReasonThrottled {
				c.mu.Lock()
				c.shed++
				c.mu.Unlock()
			}
		}),
	}
	proKey, flashKey := registry.Key(chain.Endpoints[0].Identity()), registry.Key(chain.Endpoints[1].Identity())
	if backend == inProcess {
		pro := failover.Endpoint{LLM: &stormLLM{name: proModel, g: c.pro}, Key: proKey, ModelName: proModel}
		if throttle {
			pro.Throttle = &failover.Throttle{}
		}
		c.m, err = failover.New("assistant", reg, []failover.Endpoint{pro,
			{LLM: &stormLLM{name: flashModel, g: c.flash}, Key: flashKey, ModelName: flashModel}}, opts...)
	} else {
		c.m, err = failover.FromConfig(ctx, "assistant", chain, reg,
			append(opts, failover.WithBaseTransport(memTransport{"127.0.0.1:1": c.pro, "127.0.0.1:2": c.flash}))...)
	}
	if err != nil {
		return nil, err
	}
	c.br, err = reg.Get(proKey)
	return c, err
}

// tally counts calls, calls answered by the primary and shed calls.
type tally struct{ calls, byPro, shed int }

func (t tally) fallbackShare() float64 { return float64(t.calls-t.byPro) / float64(max(t.calls, 1)) }
func (t tally) shedShare() float64     { return float64(t.shed) / float64(max(t.calls, 1)) }

// offer makes calls at stormRate for d and counts them.
func (c *stormChain) offer(ctx context.Context, d time.Duration) (tally, error) {
	return c.offerN(ctx, int(d.Seconds()*stormRate+0.5))
}

// offerN makes n calls at stormRate and counts them.
func (c *stormChain) offerN(ctx context.Context, n int) (tally, error) {
	var t tally
	req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("Hi!", genai.RoleUser)}}
	c.mu.Lock()
	shed0 := c.shed
	c.mu.Unlock()
	for range n {
		c.clk.Advance(time.Second / stormRate)
		answered := ""
		for resp, err := range c.m.GenerateContent(ctx, req, false) {
			if err != nil {
				return t, err
			}
			if resp.Content != nil && len(resp.Content.Parts) > 0 {
				answered = resp.Content.Parts[0].Text
			}
		}
		t.calls++
		if c.opened.IsZero() && !c.br.Closed() {
			c.opened = c.clk.Now()
		}
		switch answered {
		case "Hello from " + proModel + ".":
			t.byPro++
		case "Hello from " + flashModel + ".":
		default:
			return t, fmt.Errorf("call %d answered %q", t.calls, answered)
		}
	}
	c.mu.Lock()
	t.shed = c.shed - shed0
	c.mu.Unlock()
	return t, nil
}

// stormResult is one storm run.
type stormResult struct {
	shape    stormShape
	share    float64 // of the primary's calls refused
	throttle bool
	storm    tally // the whole storm
	minute3  tally // its last minute
	after    tally // the 30 s after it
	trips    uint64
	// openedAfter is how long after the storm began the primary's breaker
	// was first seen open (after a call); -1 if it never opened.
	openedAfter time.Duration
}

// openedAtOnset reports whether the primary opened in the storm's first
// second, where its first refusals can be those of sustained exhaustion.
func (r stormResult) openedAtOnset() bool { return r.openedAfter >= 0 && r.openedAfter <= time.Second }

// refuser returns a storm's decide function.
func refuser(shape stormShape, share float64, clk registry.Clock, seed uint64) func(time.Time) bool {
	if shape == loadIndependent {
		rng := rand.New(rand.NewPCG(seed, 2))
		return func(time.Time) bool { return rng.Float64() < share }
	}
	rate, burst := stormRate*(1-share), 5.0
	tokens, last := burst, clk.Now()
	return func(now time.Time) bool {
		tokens = min(burst, tokens+now.Sub(last).Seconds()*rate)
		last = now
		if tokens >= 1 {
			tokens--
			return false
		}
		return true
	}
}

// stormPlan is how long a storm run offers calls: healthy traffic, the
// storm, and after it.
type stormPlan struct{ before, storm, after time.Duration }

// tablePlan is the table's: stormBefore, stormFor, stormAfter.
var tablePlan = stormPlan{stormBefore, stormFor, stormAfter}

// measureStorm runs the table's storm: stormBefore of healthy traffic,
// the storm for stormFor, then stormAfter without it.
func measureStorm(ctx context.Context, backend stormBackend, shape stormShape, share float64, throttle bool, seed uint64) (stormResult, error) {
	return measureStormPlan(ctx, backend, tablePlan, shape, share, throttle, seed)
}

func measureStormPlan(ctx context.Context, backend stormBackend, plan stormPlan, shape stormShape, share float64, throttle bool, seed uint64) (stormResult, error) {
	r := stormResult{shape: shape, share: share, throttle: throttle, openedAfter: -1}
	c, err := newStormChain(ctx, backend, throttle, seed)
	if err != nil {
		return r, err
	}
	defer c.m.Close()
	if _, err := c.offer(ctx, plan.before); err != nil { // healthy traffic first
		return r, err
	}
	start := c.clk.Now()
	c.pro.set(refuser(shape, share, c.clk, seed))
	last := min(time.Minute, plan.storm)
	first, err := c.offer(ctx, plan.storm-last)
	if err != nil {
		return r, err
	}
	if r.minute3, err = c.offer(ctx, last); err != nil {
		return r, err
	}
	r.storm = tally{calls: first.calls + r.minute3.calls, byPro: first.byPro + r.minute3.byPro, shed: first.shed + r.minute3.shed}
	c.pro.set(nil)
	if r.after, err = c.offer(ctx, plan.after); err != nil {
		return r, err
	}
	r.trips = c.br.Counts().Trips
	if !c.opened.IsZero() {
		r.openedAfter = c.opened.Sub(start)
	}
	return r, nil
}

// exhaustionResult is a primary that starts answering 429 to every call.
type exhaustionResult struct {
	before                string
	throttle              bool
	openedOnCall, proHits int           // the call (counted from the exhaustion's start) that opened it; calls that reached it
	held                  time.Duration // from opening to the next call reaching it
}

// measureExhaustion warms the chain up (healthy, or under a storm), then
// makes the primary refuse everything with a 40 s hint.
func measureExhaustion(ctx context.Context, backend stormBackend, before string, throttle bool, seed uint64) (exhaustionResult, error) {
	r := exhaustionResult{before: before, throttle: throttle}
	c, err := newStormChain(ctx, backend, throttle, seed)
	if err != nil {
		return r, err
	}
	defer c.m.Close()
	switch before {
	case "a cold start":
	case "1 min healthy":
		if _, err := c.offer(ctx, time.Minute); err != nil {
			return r, err
		}
	case "3 min of a 33 % storm":
		c.pro.set(refuser(loadIndependent, 1.0/3, c.clk, seed))
		if _, err := c.offer(ctx, 3*time.Minute); err != nil {
			return r, err
		}
	}
	if c.br.State() != registry.StateClosed {
	}
	c.pro.hint = fmt.Sprintf("%ds", int(exhaustedHint.Seconds()))
	c.pro.set(func(time.Time) bool { return true })
	h0, _ := c.pro.counts()
	var openedAt time.Time
	for i := 1; i <= 120*stormRate; i++ {
		hb, _ := c.pro.counts()
		if _, err := c.offerN(ctx, 1); err != nil {
			return r, err
		}
		ha, _ := c.pro.counts()
		switch {
		case r.openedOnCall == 0 && c.br.State() == registry.StateOpen:
			r.openedOnCall, r.proHits, openedAt = i, ha-h0, c.clk.Now()
		case r.openedOnCall != 0 && ha > hb:
			r.held = c.clk.Now().Sub(openedAt)
			return r, nil
		}
	}
	return r, nil
}

// stormReport is everything the storms scenario measures.
type stormReport struct {
	storms     []stormResult
	exhaustion []exhaustionResult
	onsets     []onsetResult
}

// onsetResult is how often a storm's first calls open the primary.
type onsetResult struct {
	share        float64
	storms, open int
}

const stormOnsets = 1000

// stormSeed seeds a run from what it measures, so that any subset of the
// runs prints the same rows as the whole table.
func stormSeed(shape stormShape, share float64, throttle bool) uint64 {
	seed := 2026 + 1000*uint64(shape) + 10*uint64(share*100+0.5)
	if throttle {
		seed++
	}
	return seed
}

var (
	stormShares        = []float64{0.1, 1.0 / 3, 0.5}
	exhaustionBefore   = []string{"a cold start", "1 min healthy", "3 min of a 33 % storm"}
	stormThrottleOnOff = []bool{false, true}
)

func measureStorms(ctx context.Context) (stormReport, error) {
	var rep stormReport
	for _, shape := range []stormShape{loadIndependent, loadDependent} {
		for _, share := range stormShares {
			for _, throttle := range stormThrottleOnOff {
				r, err := measureStorm(ctx, viaGenai, shape, share, throttle, stormSeed(shape, share, throttle))
				if err != nil {
					return rep, err
				}
				rep.storms = append(rep.storms, r)
			}
		}
	}
	for _, share := range []float64{1.0 / 3, 0.5} {
		open, err := onsetTrips(ctx, share, stormOnsets)
		if err != nil {
			return rep, err
		}
		rep.onsets = append(rep.onsets, onsetResult{share: share, storms: stormOnsets, open: open})
	}
	for i, before := range exhaustionBefore {
		for _, throttle := range stormThrottleOnOff {
			r, err := measureExhaustion(ctx, viaGenai, before, throttle, stormSeed(2, float64(i), throttle))
			if err != nil {
				return rep, err
			}
			rep.exhaustion = append(rep.exhaustion, r)
		}
	}
	return rep, nil
}

func onOff(throttle bool) string {
	if throttle {
		return "throttle"
	}
	return "defaults"
}

const (
	stormHeader = "storm              429s policy    fallback  minute 3   shed  trips  shed after  fallback after"
	stormFooter = "fallback: share of the storm's calls answered by the fallback; minute 3: the same in its last minute; shed: calls the throttle sent straight to the fallback; trips: the primary's breaker opened; after: the 30 s after the storm"
)

func (r stormResult) row() string {
	return fmt.Sprintf("%-17s %4.0f%% %-8s %8.1f%% %8.1f%% %5.1f%% %6d %10.1f%% %14.1f%%", r.shape, 100*r.share, onOff(r.throttle),
		100*r.storm.fallbackShare(), 100*r.minute3.fallbackShare(), 100*r.storm.shedShare(), r.trips,
		100*r.after.shedShare(), 100*r.after.fallbackShare())
}

func (r exhaustionResult) row() string {
	if r.openedOnCall == 0 {
		return fmt.Sprintf("after %-22s %-8s primary never opened", r.before+",", onOff(r.throttle))
	}
	return fmt.Sprintf("after %-22s %-8s primary open on call %d (its %d%s call), next called %.1f s later", r.before+",", onOff(r.throttle),
		r.openedOnCall, r.proHits, ordinal(r.proHits), r.held.Seconds())
}

func (rep stormReport) print(w io.Writer) {
	fmt.Fprintf(w, "storms: %d calls a second, %s healthy, %s of storm (every 429 with RetryInfo %s), %s after it; fake clock, real genai client, fake Gemini endpoints in process\n\n",
		stormRate, stormBefore, stormFor, stormHint, stormAfter)
	fmt.Fprintln(w, stormHeader)
	for _, r := range rep.storms {
		fmt.Fprintln(w, r.row())
	}
	fmt.Fprintf(w, "\n%s\n", stormFooter)
	fmt.Fprintf(w, "\nsustained exhaustion: the primary answers 429 (RetryInfo %s) to every call, %d calls a second\n", exhaustedHint, stormRate)
	for _, r := range rep.exhaustion {
		fmt.Fprintln(w, r.row())
	}
	fmt.Fprintf(w, "\nstorm onsets: the first five calls of sustained exhaustion and of a storm can look alike\n")
	for _, o := range rep.onsets {
		fmt.Fprintln(w, o.row())
	}
}

func (o onsetResult) row() string {
	return fmt.Sprintf("of %d storms refusing %.0f%% that start after healthy traffic, %d opened the primary in their first second (%.1f%%)",
		o.storms, 100*o.share, o.open, 100*float64(o.open)/float64(o.storms))
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

func runStorms(ctx context.Context, seeds int) error {
	if seeds > 0 {
		return runStormSweep(ctx, os.Stdout, seeds)
	}
	rep, err := measureStorms(ctx)
	if err != nil {
		return err
	}
	rep.print(os.Stdout)
	return nil
}

// stormTarget is the most of a storm's calls the fallback may answer
// (issue 23), or 0 where none is set: a load-independent storm refusing a
// third, at most 38 %; refusing half, at most 55 %.
func stormTarget(shape stormShape, share float64) float64 {
	switch {
	case shape != loadIndependent:
		return 0
	case share > 0.3 && share < 0.4:
		return 0.38
	case share == 0.5:
		return 0.55
	}
	return 0
}

// sweepResult is one storm over many seeds.
type sweepResult struct {
	shape    stormShape
	share    float64
	throttle bool
	seeds    int
	// The fallback's share of the storm's calls: the mean over the seeds,
	// the worst seed, and the worst seed in which the primary never opened.
	mean, worst, worstClosed float64
	// opened counts the seeds in which the primary's breaker opened, onset
	// those in which it opened in the storm's first second; within, the
	// seeds within the storm's target (stormTarget).
	opened, onset, within int
	// openedSeeds are the seeds in which the primary opened.
	openedSeeds []uint64
	// shedMean is the mean share of the storm's calls shed;
	// worstShedAfter the most shed in the 30 s after a storm.
	shedMean, worstShedAfter float64
}

// sweepSeeds are the seeds a sweep of n runs uses: 1…n, the same for every
// storm, so that a storm's defaults and throttle runs face the same
// refusals (those of the calls sent to the primary, in order).
func sweepSeeds(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// measureSweep runs one storm once per seed, in process (the same
// failover, breaker, throttle and exhaustion code on the same answers as
// the table's runs through genai).
func measureSweep(ctx context.Context, shape stormShape, share float64, throttle bool, seeds []uint64) (sweepResult, error) {
	w := sweepResult{shape: shape, share: share, throttle: throttle, seeds: len(seeds)}
	target := stormTarget(shape, share)
	for _, seed := range seeds {
		r, err := measureStorm(ctx, inProcess, shape, share, throttle, seed)
		if err != nil {
			return w, fmt.Errorf("seed %d: %w", seed, err)
		}
		f := r.storm.fallbackShare()
		w.mean += f / float64(len(seeds))
		w.worst = max(w.worst, f)
		if r.openedAfter >= 0 {
			w.opened++
			w.openedSeeds = append(w.openedSeeds, seed)
			if r.openedAtOnset() {
				w.onset++
			}
		} else {
			w.worstClosed = max(w.worstClosed, f)
		}
		if target > 0 && f <= target {
			w.within++
		}
		w.shedMean += r.storm.shedShare() / float64(len(seeds))
		w.worstShedAfter = max(w.worstShedAfter, r.after.shedShare())
	}
	return w, nil
}

var sweepHeader = fmt.Sprintf("%-17s %5s %-8s %14s %8s %14s %8s %10s %8s %8s %6s %12s", "storm", "429s", "policy",
	"fallback: mean", "worst", "worst closed", "opened", "at onset", "target", "within", "shed", "shed after")

const (
	sweepFooter = "fallback: share of the storm's calls answered by the fallback: the mean over the seeds, the worst seed, and the worst seed in which the primary never opened; opened: seeds in which the primary's breaker opened, at onset: in the storm's first second; within: seeds within the target; shed: calls the throttle sent straight to the fallback, the mean over the seeds, and the most in the 30 s after the storm"
)

func (w sweepResult) row() string {
	target, within := "", ""
	if t := stormTarget(w.shape, w.share); t > 0 {
		target, within = fmt.Sprintf("≤ %.0f%%", 100*t), fmt.Sprintf("%d/%d", w.within, w.seeds)
	}
	target = strings.Repeat(" ", max(0, 8-utf8.RuneCountInString(target))) + target
	return fmt.Sprintf("%-17s %4.0f%% %-8s %13.1f%% %7.1f%% %13.1f%% %8s %10d %s %8s %5.1f%% %11.1f%%", w.shape, 100*w.share, onOff(w.throttle),
		100*w.mean, 100*w.worst, 100*w.worstClosed, fmt.Sprintf("%d/%d", w.opened, w.seeds), w.onset, target, within, 100*w.shedMean, 100*w.worstShedAfter)
}

// runStormSweep prints every storm of the table over seeds 1…n.
func runStormSweep(ctx context.Context, out io.Writer, n int) error {
	fmt.Fprintf(out, "storms over seeds 1-%d: %d calls a second, %s healthy, %s of storm (every 429 with RetryInfo %s), %s after it; fake clock, in-process endpoints\n\n",
		n, stormRate, stormBefore, stormFor, stormHint, stormAfter)
	fmt.Fprintln(out, sweepHeader)
	for _, shape := range []stormShape{loadIndependent, loadDependent} {
		for _, share := range stormShares {
			for _, throttle := range stormThrottleOnOff {
				w, err := measureSweep(ctx, shape, share, throttle, sweepSeeds(n))
				if err != nil {
					return err
				}
				fmt.Fprintln(out, w.row())
			}
		}
	}
	fmt.Fprintf(out, "\n%s\n", sweepFooter)
	return nil
}

// onsetLLM is an in-process endpoint for counting storm onsets cheaply: it
// answers, or fails the way model/gemini does on a 429 with RetryInfo.
type onsetLLM struct {
	name   string
	refuse func() bool
}

func (o *onsetLLM) Name() string { return o.name }

func (o *onsetLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if o.refuse != nil && o.refuse() {
			yield(nil, genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted",
				Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": stormHint}}})
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("ok", genai.RoleModel), TurnComplete: true}, nil)
	}
}

// onsetTrips counts, of n storms refusing share of the calls independently
// that start after healthy traffic, those whose first calls open the
// primary (5 refusals in a row before any accepted call: the start of
// sustained exhaustion looks the same). Public API, in-process endpoints.
func onsetTrips(ctx context.Context, share float64, n int) (int, error) {
	rng := rand.New(rand.NewPCG(7, uint64(share*100)))
	storm := false
	pro := &onsetLLM{name: proModel, refuse: func() bool { return storm && rng.Float64() < share }}
	flash := &onsetLLM{name: flashModel}
	trips := 0
	for range n {
		clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		keys := []registry.Key{"model:pro", "model:flash"}
		reg, err := registry.New(append(failover.PolicyOptions(keys...), registry.WithClock(clk))...)
		if err != nil {
			return 0, err
		}
		m, err := failover.New("assistant", reg, []failover.Endpoint{{LLM: pro, Key: keys[0]}, {LLM: flash, Key: keys[1]}},
			failover.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			return 0, err
		}
		storm = false
		for i := range 60 { // 30 healthy calls, then 30 of the storm
			if i == 30 {
				storm = true
			}
			clk.Advance(time.Second / stormRate)
			for range m.GenerateContent(ctx, &model.LLMRequest{}, false) {
			}
		}
		b, err := reg.Get(keys[0])
		if err != nil {
			return 0, err
		}
		if b.Counts().Trips > 0 {
			trips++
		}
		m.Close()
	}
	return trips, nil
}
