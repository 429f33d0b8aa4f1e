package failover_test

// Partial 429 storms whose refusals do not depend on the load (a shared
// quota, other tenants), and the first turn of an outage, end to end: the
// real genai client and ADK's model/gemini against fake Gemini endpoints on
// 127.0.0.1, on the registry's fake clock.

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// A storm refusing every primary call with probability 1/3 (RetryInfo
// 30 s), whatever the load, with the default policies: about a third of the
// calls go to the fallback, as per-call failover alone gives, and the
// primary never opens. Counting three refusals in a row (the last hinted)
// opened it by chance about every 27 calls, for the hint: 90 % of the calls
// went to the fallback.
func TestGeminiLoadIndependentStormKeepsThePrimary(t *testing.T) {
	e := newRLEnv(t, nil)
	rng := rand.New(rand.NewPCG(23, 1))
	refused := strings.Replace(body429in40s, `"40s"`, `"30s"`, 1)
	e.primary.before = func() *reply {
		if rng.Float64() < 1.0/3 {
			return &reply{status: 429, body: refused}
		}
		return nil
	}
	const n = 900 // 30 s at 30 calls a second
	fallback := 0
	for range n {
		e.clk.Advance(time.Second / 30)
		if e.call(t) == "from fallback" {
			fallback++
		}
	}
	share := float64(fallback) / n
	b := mustBreaker(t, e.reg, e.pKey)
	t.Logf("fallback %.1f%%, trips %d", 100*share, b.Counts().Trips)
	if share > 0.38 {
		t.Errorf("%.1f%% of the calls went to the fallback under a storm refusing a third, want at most 38%%", 100*share)
	}
	if tr := b.Counts().Trips; tr != 0 {
		t.Errorf("the primary opened %d times: a partial storm is not exhaustion", tr)
	}
}

// With the throttle, the same storm (without retry hints, so that the old
// breaker stayed closed too): the throttle does not feed on its own
// shedding (SRE's formula, counting shed calls as requests that are never
// accepted, ran to its 0.9 cap: 92 % of the calls to the fallback by
// minute 3, 80 % still shed 30–60 s after the storm), and it lets go once
// the storm ends.
func TestGeminiThrottleDoesNotRunAwayInALoadIndependentStorm(t *testing.T) {
	e := newRLEnv(t, &config.Throttle{}, failover.WithThrottleRandom(rand.New(rand.NewPCG(24, 1)).Float64))
	rng := rand.New(rand.NewPCG(24, 2))
	storm := true
	unhinted := `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`
	e.primary.before = func() *reply {
		if storm && rng.Float64() < 1.0/3 {
			return &reply{status: 429, body: unhinted}
		}
		return nil
	}
	count := func(calls int) (fallback float64, shed int) {
		e.mu.Lock()
		s0 := e.shed
		e.mu.Unlock()
		n := 0
		for range calls {
			e.clk.Advance(time.Second / 30)
			if e.call(t) == "from fallback" {
				n++
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return float64(n) / float64(calls), e.shed - s0
	}
	during, _ := count(1800) // a minute
	storm = false
	after, shedAfter := count(900) // 30 s
	t.Logf("during: %.1f%% to the fallback; after: %.1f%%, %d shed", 100*during, 100*after, shedAfter)
	if during > 0.38 {
		t.Errorf("%.1f%% of the calls went to the fallback under a storm refusing a third, want at most 38%%", 100*during)
	}
	if share := float64(shedAfter) / 900; share > 0.10 {
		t.Errorf("%.1f%% of the calls shed in the 30 s after the storm, want at most 10%%", 100*share)
	}
}

// The first turn of an outage, every endpoint still closed and each
// answering 429 with its own RetryInfo (30 s, 45 s): the readable answer
// says when the first of them may be asked again, not "about 1 second".
func TestGeminiFirstExhaustedTurnTellsTheServersRetryTime(t *testing.T) {
	e := newRLEnv(t, nil)
	e.primary.setDefault(reply{status: 429, body: strings.Replace(body429in40s, `"40s"`, `"30s"`, 1)})
	e.fallback.setDefault(reply{status: 429, body: strings.Replace(body429in40s, `"40s"`, `"45s"`, 1)})
	got := e.call(t)
	if want := "Please try again in about 30 seconds."; !strings.Contains(got, want) {
		t.Fatalf("answer %q, want it to say %q", got, want)
	}
	for _, k := range []registry.Key{e.pKey} {
		if st := mustBreaker(t, e.reg, k).State(); st != registry.StateClosed {
			t.Errorf("%s is %s after one 429", k, st)
		}
	}
}
