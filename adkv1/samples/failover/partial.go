package main

import (
	"context"
	"fmt"
	"io"
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

// Partial-429 scenario: the primary accepts 20 of the 30 calls a second
// offered to it (a token bucket with a burst of 5, on the fake clock) and
// answers the rest 429 with a 1 s RetryInfo; the fallback answers
// everything. The same traffic runs with throttling off and on.
const (
	offeredPerSecond  = 30
	acceptedPerSecond = 20
	bucketBurst       = 5
	stormCalls        = 1800 // 60 s of virtual time
)

// limitedGemini is a fake Gemini endpoint behind a token bucket on clock.
// With rate 0 it answers 429 to every call (hint 40 s).
type limitedGemini struct {
	*httptest.Server
	clock        registry.Clock
	rate, burst  float64
	hint         string
	mu           sync.Mutex
	tokens       float64
	last         time.Time
	hits, refuse int
}

func newLimitedGemini(clock registry.Clock, rate, burst float64, hint string) *limitedGemini {
	f := &limitedGemini{clock: clock, rate: rate, burst: burst, tokens: burst, last: clock.Now(), hint: hint}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
		name = name[:strings.IndexByte(name, ':')]
		f.mu.Lock()
		now := f.clock.Now()
		f.tokens = min(f.burst, f.tokens+now.Sub(f.last).Seconds()*f.rate)
		f.last = now
		f.hits++
		ok := f.tokens >= 1
		if ok {
			f.tokens--
		} else {
			f.refuse++
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(429)
			fmt.Fprintf(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",`+
				`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}]}}`, f.hint)
			return
		}
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello from %s."}]},"finishReason":"STOP"}],"modelVersion":%q}`, name, name)
	}))
	return f
}

func (f *limitedGemini) counts() (hits, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits, f.refuse
}

type partialRun struct {
	calls, byPrimary, byFallback, shed, after429, unanswered int
	maxHops, hops                                            int
	primaryHits, primary429                                  int
	trips                                                    uint64
	openedAt                                                 int // call that opened the primary; 0 for none
	maxWall                                                  time.Duration
}

// runChain offers calls (one every 1/offeredPerSecond s) to a chain whose
// primary is pro, with throttling on or off.
func runChain(ctx context.Context, throttle bool, pro *limitedGemini, clk *registrytest.FakeClock, calls int) (partialRun, error) {
	flash := newLimitedGemini(clk, 1e9, 1e9, "1s")
	defer flash.Close()
	os.Setenv("ADKBREAKER_SAMPLE_KEY", "fake-key")
	ep := config.ModelEndpoint{Model: proModel, Backend: config.BackendGeminiAPI, BaseURL: pro.URL, APIKeyEnv: "ADKBREAKER_SAMPLE_KEY"}
	if throttle {
		ep.Throttle = &config.Throttle{} // the defaults: k 1.2, window 30s
	}
	chain := config.ModelChain{Endpoints: []config.ModelEndpoint{ep,
		{Model: flashModel, Backend: config.BackendGeminiAPI, BaseURL: flash.URL, APIKeyEnv: "ADKBREAKER_SAMPLE_KEY"}}}
	f := &config.File{Version: 1, Models: map[string]config.ModelChain{"assistant": chain}}
	reg, err := registry.New(append(failover.RegistryOptions(f), registry.WithClock(clk))...)
	if err != nil {
		return partialRun{}, err
	}
	var r partialRun
	var mu sync.Mutex
	m, err := failover.FromConfig(ctx, "assistant", chain, reg,
		failover.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		failover.WithThrottleRandom(rand.New(rand.NewPCG(2026, 12)).Float64),
		failover.WithOnFailover(func(_ context.Context, ev failover.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Reason {
			case failover.ReasonThrottled:
				r.shed++
			case failover.ReasonRateLimited:
				r.after429++
			}
		}))
	if err != nil {
		return partialRun{}, err
	}
	defer m.Close()
	b, err := reg.Get(registry.Key(chain.Endpoints[0].Identity()))
	if err != nil {
		return partialRun{}, err
	}
	req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("Hi!", genai.RoleUser)}}
	for i := 1; i <= calls; i++ {
		clk.Advance(time.Second / offeredPerSecond)
		p0, _ := pro.counts()
		f0, _ := flash.counts()
		start := time.Now()
		answered := ""
		for resp, err := range m.GenerateContent(ctx, req, false) {
			if err == nil && resp.Content != nil && len(resp.Content.Parts) > 0 {
				answered = resp.Content.Parts[0].Text
			}
		}
		r.maxWall = max(r.maxWall, time.Since(start))
		p1, _ := pro.counts()
		f1, _ := flash.counts()
		hops := p1 - p0 + f1 - f0
		r.hops += hops
		r.maxHops = max(r.maxHops, hops)
		switch answered {
		case "Hello from " + proModel + ".":
			r.byPrimary++
		case "Hello from " + flashModel + ".":
			r.byFallback++
		default:
			r.unanswered++
		}
		if r.openedAt == 0 && b.State() == registry.StateOpen {
			r.openedAt = i
		}
		r.calls++
	}
	r.primaryHits, r.primary429 = pro.counts()
	r.trips = b.Counts().Trips
	return r, nil
}

func runPartial429(ctx context.Context) error {
	fmt.Printf("partial-429: the primary accepts %d of the %d calls a second offered (token bucket, burst %d) and answers the rest 429 (RetryInfo 1s); %d calls (%d s of fake-clock time) per run, real genai client, fake Gemini endpoints on 127.0.0.1\n\n",
		acceptedPerSecond, offeredPerSecond, bucketBurst, stormCalls, stormCalls/offeredPerSecond)
	fmt.Printf("%-26s %8s %8s %8s %6s %8s %9s %6s %6s %6s %6s\n", "run", "answered", "primary", "fallback", "share", "straight", "after429", "429s", "hops", "max", "trips")
	defer fmt.Println("\nstraight: calls the throttle sent to the fallback without calling the primary; after429: calls sent there after the primary answered 429; hops: endpoint calls per call (mean); max: the most one call made")
	var off partialRun
	for _, throttle := range []bool{false, true} {
		clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		pro := newLimitedGemini(clk, acceptedPerSecond, bucketBurst, "1s")
		r, err := runChain(ctx, throttle, pro, clk, stormCalls)
		pro.Close()
		if err != nil {
			return err
		}
		name := "throttle off"
		if throttle {
			name = fmt.Sprintf("throttle on (k %.1f, %s)", failover.DefaultThrottleK, failover.DefaultThrottleWindow)
		} else {
			off = r
		}
		fmt.Printf("%-26s %8d %8d %8d %5.1f%% %8d %9d %6d %6.2f %6d %6d\n", name, r.calls-r.unanswered, r.byPrimary, r.byFallback,
			100*float64(r.byFallback)/float64(r.calls), r.shed, r.after429, r.primary429, float64(r.hops)/float64(r.calls), r.maxHops, r.trips)
		if throttle {
			fmt.Printf("\nwith throttling the fallback served %+.1f points of the calls against the run without; %d of its %d calls went to it straight, without a 429 round trip first (%d 429s at the primary instead of %d); no call made more endpoint calls (max %d with, %d without)\n",
				100*float64(r.byFallback-off.byFallback)/float64(r.calls), r.shed, r.byFallback, r.primary429, off.primary429, r.maxHops, off.maxHops)
		}
	}
	fmt.Printf("\nsustained exhaustion: the primary answers 429 (RetryInfo 40s) to every call; %d calls over 10 s\n", 10*offeredPerSecond)
	for _, throttle := range []bool{false, true} {
		clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		pro := newLimitedGemini(clk, 0, 0, "40s")
		r, err := runChain(ctx, throttle, pro, clk, 10*offeredPerSecond)
		pro.Close()
		if err != nil {
			return err
		}
		name := "throttle off"
		if throttle {
			name = "throttle on"
		}
		fmt.Printf("%-14s primary open on call %d; the primary was called %d times in all, %d calls answered by the fallback\n", name, r.openedAt, r.primaryHits, r.byFallback)
	}
	return nil
}
