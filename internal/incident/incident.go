package incident

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The reference incident: a third-party enrichment API behind one tool.
const (
	Dependency     = "enrichment-api"
	Simulated      = 15 * time.Minute
	TurnEvery      = 100 * time.Millisecond
	OutageFrom     = 3 * time.Minute
	OutageTo       = 12 * time.Minute
	HealthyLatency = 50 * time.Millisecond // the default of -healthy
	CallTimeout    = 5 * time.Second       // the tool's client timeout (hang mode waits for it)
	fastFailure    = 20 * time.Millisecond // mode fast: 503 after this
	modelRetries   = 3                     // the model retries a failed tool up to this many times per turn
	bucket         = 10 * time.Second      // chart resolution
)

// IncidentPolicy is the incident's breaker: "50% error rate over a 20-call window,
// 30-second cool-down, 5-second tool timeout, bulkhead of 20 concurrent
// calls", the rate gate alone, and holds capped at 1 minute (max_open_for:
// 1m, the library's default cap before it became 2 minutes: the incident's
// target is recovery within 60 s). Everything else — the growth of the
// holds from the 30 s cool-down, their jitter, and the in-flight slowness
// detector among it — is the library's default.
func IncidentPolicy() registry.Policy {
	return registry.Policy{
		FailureRate:                0.5,
		CountWindow:                20,
		MinCalls:                   20,
		DisableConsecutiveFailures: true,
		OpenFor:                    30 * time.Second,
		MaxOpenFor:                 time.Minute,
		CallTimeout:                CallTimeout,
		MaxConcurrent:              20,
	}
}

// SeededRand is the jitter source: fixed, so that every run prints the same
// numbers.
func SeededRand() func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(2, 12))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// Result is what one variant did.
type Result struct {
	Variant string
	Turns   []TurnStats
	Dep     DepStats
	// llmOutage counts model calls made while the dependency was down.
	LLMOutage int
	// tokensOutage counts the tokens of those calls (tokens.go).
	TokensOutage int
}

// TurnStats is one user turn.
type TurnStats struct {
	Start, End time.Duration // virtual, from the simulation's start
	LLMCalls   int
	Tokens     int // prompt + response tokens of the turn's model calls (tokens.go)
	Outcome    Outcome
}

type Outcome int

const (
	Useful   Outcome = iota // answered with the enrichment
	Degraded                // answered without it, having been told it is unavailable
	Failed                  // gave up after errors, or the run failed
)

type TurnKey struct{}

// DepStats is what the dependency saw.
type DepStats struct {
	calls      int       // every call that reached it
	DeadCalls  int       // calls that arrived while it was down (probes included)
	PreTrip    int       // of those, the calls that arrived while its breaker was closed
	probes     int       // calls that arrived while its breaker was half-open
	healthHits int       // health checks (none in this version of the sample)
	inflight   int       // now
	Peak       int       // most calls in flight at once
	firstOK    time.Time // first successful call after the outage ended
	perBucket  []int     // calls per 10 s
}

// DependencySim is the enrichment API: healthy (50 ms, or -healthy), or down from minute 3
// to minute 12, when it either hangs until the caller's 5 s timeout (mode
// hang) or answers 503 in 20 ms (mode fast).
type DependencySim struct {
	s       *Sim
	Mode    string
	healthy time.Duration // latency when up
	reg     *registry.Registry
	// state, when set, reports the state of a breaker that is not the
	// registry's (a baseline's, baselines.go).
	state func() registry.State
	// unavailable is the error of a call in mode fast (a 503).
	unavailable func() error
	mu          sync.Mutex
	st          DepStats
}

// NewDependencySim returns the enrichment API of a replay on s: mode
// "hang" or "fast", answering in healthy when it is up, reporting the
// state of reg's breaker (nil: no breaker); unavailable builds the error
// of a call in mode fast (a 503).
func NewDependencySim(s *Sim, mode string, healthy time.Duration, reg *registry.Registry, unavailable func() error) *DependencySim {
	return &DependencySim{s: s, Mode: mode, healthy: healthy, reg: reg, unavailable: unavailable, st: DepStats{perBucket: make([]int, int(Simulated/bucket))}}
}

// Stats returns what the dependency saw.
func (d *DependencySim) Stats() DepStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

func (d *DependencySim) call(context.Context) (map[string]any, error) {
	at := d.s.Since()
	down := at >= OutageFrom && at < OutageTo
	d.mu.Lock()
	d.st.calls++
	d.st.perBucket[min(int(at/bucket), len(d.st.perBucket)-1)]++
	state := registry.StateClosed // no breaker: every call is a closed one
	if d.reg != nil {
		if b, ok := d.reg.Lookup(Dependency); ok {
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
		d.st.DeadCalls++
		if state == registry.StateClosed {
			d.st.PreTrip++
		}
	}
	d.st.inflight++
	d.st.Peak = max(d.st.Peak, d.st.inflight)
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
		if at >= OutageTo && d.st.firstOK.IsZero() {
			d.st.firstOK = epoch.Add(at)
		}
		d.mu.Unlock()
		return map[string]any{"company": "ACME GmbH", "employees": 420, "industry": "logistics"}, nil
	case d.Mode == "hang":
		d.s.Sleep(CallTimeout)
		return nil, fmt.Errorf("enrichment: no answer within %s: %w", CallTimeout, context.DeadlineExceeded)
	default:
		d.s.Sleep(fastFailure)
		return nil, d.unavailable()
	}
}

// Decide is the model's reasoning: "" means call the tool (again).
func Decide(responses []map[string]any) (string, Outcome) {
	if len(responses) == 0 {
		return "", Useful
	}
	last := responses[len(responses)-1]
	switch {
	case last["company"] != nil:
		return "ACME GmbH: logistics, 420 employees.", Useful
	case IsPayload(last):
		// retry.advised is false: the firm "do not retry".
		return "Live enrichment is unavailable right now; here is the profile without it.", Degraded
	case strings.Contains(fmt.Sprint(last["reflection_guidance"]), "Do not attempt to use"):
		return "Sorry, I could not enrich this profile.", Failed
	case len(responses) <= modelRetries:
		return "", Useful // a failure: try again
	}
	return "Sorry, I could not enrich this profile.", Failed
}

// IsPayload reports whether m is adkbreaker's unavailable payload; Parse
// accepts only payloads whose retry.advised is false.
func IsPayload(m map[string]any) bool {
	_, ok := degrade.Parse(m)
	return ok
}

// ErrUnknownMode is returned for a -mode other than hang or fast.
var ErrUnknownMode = errors.New(`-mode must be "hang" or "fast"`)

// ErrHealthy is returned for a -healthy outside (0, the call timeout).
var ErrHealthy = fmt.Errorf("-healthy must be above 0 and below the call timeout (%s)", CallTimeout)
