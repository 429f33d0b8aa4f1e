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
	f.mu.Lock()
	f.hits++
	no := f.decide != nil && f.decide(f.clock.Now())
	if no {
		f.refuse++
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if no {
		w.WriteHeader(429)
		fmt.Fprintf(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}]}}`, f.hint)
		return
	}
	fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello from %s."}]},"finishReason":"STOP"}],"modelVersion":%q}`, name, name)
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
}

func newStormChain(ctx context.Context, throttle bool, seed uint64) (*stormChain, error) {
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
	c.m, err = failover.FromConfig(ctx, "assistant", chain, reg,
		failover.WithBaseTransport(memTransport{"127.0.0.1:1": c.pro, "127.0.0.1:2": c.flash}),
		failover.WithLogger(slog.New(slog.DiscardHandler)),
		failover.WithThrottleRandom(rand.New(rand.NewPCG(seed, 1)).Float64),
		failover.WithOnFailover(func(_ context.Context, ev failover.Event) {
			if ev.Reason == failover.ReasonThrottled {
				c.mu.Lock()
				c.shed++
				c.mu.Unlock()
			}
		}))
	if err != nil {
		return nil, err
	}
	c.br, err = reg.Get(registry.Key(chain.Endpoints[0].Identity()))
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
}

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

// measureStorm runs stormBefore of healthy traffic, one storm for
// stormFor, then stormAfter without it.
func measureStorm(ctx context.Context, shape stormShape, share float64, throttle bool, seed uint64) (stormResult, error) {
	r := stormResult{shape: shape, share: share, throttle: throttle}
	c, err := newStormChain(ctx, throttle, seed)
	if err != nil {
		return r, err
	}
	defer c.m.Close()
	if _, err := c.offer(ctx, stormBefore); err != nil { // healthy traffic first
		return r, err
	}
	c.pro.set(refuser(shape, share, c.clk, seed))
	first, err := c.offer(ctx, stormFor-time.Minute)
	if err != nil {
		return r, err
	}
	if r.minute3, err = c.offer(ctx, time.Minute); err != nil {
		return r, err
	}
	r.storm = tally{calls: first.calls + r.minute3.calls, byPro: first.byPro + r.minute3.byPro, shed: first.shed + r.minute3.shed}
	c.pro.set(nil)
	if r.after, err = c.offer(ctx, stormAfter); err != nil {
		return r, err
	}
	r.trips = c.br.Counts().Trips
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
func measureExhaustion(ctx context.Context, before string, throttle bool, seed uint64) (exhaustionResult, error) {
	r := exhaustionResult{before: before, throttle: throttle}
	c, err := newStormChain(ctx, throttle, seed)
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
				r, err := measureStorm(ctx, shape, share, throttle, stormSeed(shape, share, throttle))
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
			r, err := measureExhaustion(ctx, before, throttle, stormSeed(2, float64(i), throttle))
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

func runStorms(ctx context.Context) error {
	rep, err := measureStorms(ctx)
	if err != nil {
		return err
	}
	rep.print(os.Stdout)
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
