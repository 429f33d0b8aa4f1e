package incident

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/sony/gobreaker/v2"
)

// -scenario baselines: the same outage, in one run, through what a user
// would write instead of adkbreaker — nothing, ADK's retryandreflect,
// gobreaker with its defaults around the tool, NeMo Agent Toolkit's tool
// breaker settings — and adkbreaker with the library's defaults and with
// the incident's settings; in mode fast and hang, for the single agent
// and through the sub-agent chain, and the healthy-tail benchmark for the
// false trips each configuration's breaker makes.

// Baseline is one configuration of the table.
type Baseline struct {
	Name string
	// Tail builds the configuration's breaker for the false-trip
	// benchmark; nil: no breaker, nothing can trip.
	Tail func(clk *registrytest.FakeClock) (TailGuard, error)
}

// The configurations' names.
const (
	NameGobreaker = "gobreaker-defaults"
	NameNemo      = "nemo-style"
	NameDefaults  = "adkbreaker-defaults"
	NameIncident  = "adkbreaker"
)

// BaselineScenario is one column group: a mode, with or without the
// sub-agent.
type BaselineScenario struct {
	Name  string
	Mode  string
	Chain bool
}

var BaselineScenarios = []BaselineScenario{
	{Name: "fast", Mode: "fast"},
	{Name: "hang", Mode: "hang"},
	{Name: "chain fast", Mode: "fast", Chain: true},
	{Name: "chain hang", Mode: "hang", Chain: true},
}

// BaselineSize is how much the run replays: the turn rates of the single
// agent and of the chain, and the false-trip benchmark's calls per row.
type BaselineSize struct {
	Every, ChainEvery time.Duration
	TailCalls         int
}

// FullBaselines is -scenario baselines: the incident's and the chain's
// traffic, the benchmark's million calls per row.
var FullBaselines = BaselineSize{Every: TurnEvery, ChainEvery: ChainTurnEvery, TailCalls: TailCalls}

// BaselineResults is the table: rows[scenario][configuration], in the
// order of baselineScenarios and baselines; falseTrips (healthy-tail) and
// flakyTrips (flaky) per configuration (-1: no breaker).
type BaselineResults struct {
	size       BaselineSize
	Configs    []Baseline
	rows       [][]Row
	falseTrips []int
	flakyTrips []int
}

// The flaky benchmark: what a breaker that trips on few consecutive
// failures costs elsewhere. A healthy dependency (the healthy-tail's
// log-normal latency) whose calls fail now and then, independently —
// 2%, a rate at which nobody would want it cut off. Every trip refuses a
// working dependency for the whole hold: a false trip.
const FlakyErrorRate = 0.02

var flakyShape = tailShapes[0]

// RunBaselines replays every scenario for every configuration of configs
// (replay plays scenario sc for configs[j]) and runs
// the false-trip benchmark for every configuration with a breaker, at
// most GOMAXPROCS at a time (each replay has its own virtual clock: the
// results do not depend on scheduling).
func RunBaselines(size BaselineSize, configs []Baseline, replay func(j int, sc BaselineScenario) (*Result, error)) (*BaselineResults, error) {
	out := &BaselineResults{size: size, Configs: configs, rows: make([][]Row, len(BaselineScenarios)),
		falseTrips: make([]int, len(configs)), flakyTrips: make([]int, len(configs))}
	var jobs []func() error
	for i, sc := range BaselineScenarios {
		out.rows[i] = make([]Row, len(configs))
		for j, b := range configs {
			jobs = append(jobs, func() error {
				r, err := replay(j, sc)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", sc.Name, b.Name, err)
				}
				out.rows[i][j] = Summarise(r)
				return nil
			})
		}
	}
	var tmu sync.Mutex
	for j, b := range configs {
		if b.Tail == nil {
			out.falseTrips[j], out.flakyTrips[j] = -1, -1
			continue
		}
		for _, sh := range tailShapes {
			for _, rate := range tailRates {
				jobs = append(jobs, func() error {
					n, err := runTailGuard(sh, rate, size.TailCalls, 17, 0, b.Tail)
					if err != nil {
						return fmt.Errorf("healthy-tail, %s: %w", b.Name, err)
					}
					tmu.Lock()
					out.falseTrips[j] += n
					tmu.Unlock()
					return nil
				})
			}
		}
		for _, rate := range tailRates {
			jobs = append(jobs, func() error {
				n, err := runTailGuard(flakyShape, rate, size.TailCalls, 17, FlakyErrorRate, b.Tail)
				if err != nil {
					return fmt.Errorf("flaky, %s: %w", b.Name, err)
				}
				tmu.Lock()
				out.flakyTrips[j] += n
				tmu.Unlock()
				return nil
			})
		}
	}
	if err := runJobs(len(jobs), func(k int) error { return jobs[k]() }); err != nil {
		return nil, err
	}
	return out, nil
}

// runJobs runs job(0) … job(n-1) on GOMAXPROCS workers and joins their
// errors.
func runJobs(n int, job func(k int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range next {
				errs[k] = job(k)
			}
		})
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// TailGuard is a configuration's breaker in the false-trip benchmark.
type TailGuard interface {
	// reserve asks to start a call now; done reports its outcome.
	reserve() (done func(failed bool), ok bool)
	Trips() int
}

// runTailGuard is runTail (tail.go) for any configuration's breaker: calls
// calls, Poisson arrivals of perSecond a second, each ending after shape's
// latency, a failure with probability errRate (0: every call succeeds);
// it returns the breaker's trips, every one false.
func runTailGuard(shape tailShape, perSecond, calls int, seed uint64, errRate float64, build func(*registrytest.FakeClock) (TailGuard, error)) (int, error) {
	clk := registrytest.NewFakeClock(epoch)
	g, err := build(clk)
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(perSecond)))
	errs := rand.New(rand.NewPCG(seed+1, uint64(perSecond))) // a stream of its own: the latencies stay the healthy-tail's
	var h doneHeap
	end := func() {
		c := heap.Pop(&h).(pendingDone)
		clk.Set(epoch.Add(c.at))
		c.done(c.failed)
	}
	now := time.Duration(0)
	mean := float64(time.Second) / float64(perSecond)
	for range calls {
		now += time.Duration(rng.ExpFloat64() * mean)
		for len(h) > 0 && h[0].at <= now {
			end()
		}
		clk.Set(epoch.Add(now))
		done, ok := g.reserve()
		if !ok {
			continue
		}
		heap.Push(&h, pendingDone{at: now + shape.draw(rng), done: done, failed: errRate > 0 && errs.Float64() < errRate})
	}
	for len(h) > 0 {
		end()
	}
	return g.Trips(), nil
}

// registryTail is adkbreaker's breaker (the registry's) with policy p.
type registryTail struct{ b *registry.Breaker }

func NewRegistryTail(clk *registrytest.FakeClock, p registry.Policy) (TailGuard, error) {
	reg, err := registry.New(registry.WithClock(clk), registry.WithRand(SeededRand()), registry.WithPolicy(Dependency, p))
	if err != nil {
		return nil, err
	}
	b, err := reg.Get(Dependency)
	return registryTail{b}, err
}

func (t registryTail) reserve() (func(bool), bool) {
	res, d := t.b.Reserve()
	if !d.Allowed {
		return nil, false
	}
	return func(failed bool) {
		o := registry.Success
		if failed {
			o = registry.Failure
		}
		res.Report(o, 0)
	}, true
}

func (t registryTail) Trips() int { return int(t.b.Counts().Trips) }

// gobreakerTail is gobreakerGuard's breaker through gobreaker's two-step
// API (Allow, then done), which is what Execute does around a call: the
// benchmark's calls overlap and end out of order.
type gobreakerTail struct {
	hold virtualHold
	cb   *gobreaker.TwoStepCircuitBreaker[struct{}]
}

func newGobreakerTail(clk clock, st gobreaker.Settings) *gobreakerTail {
	g := &gobreakerTail{}
	st.Timeout = g.hold.init(clk, st.Timeout)
	st.OnStateChange = g.hold.onStateChange
	g.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
	return g
}

func (g *gobreakerTail) reserve() (func(bool), bool) {
	if g.hold.held() {
		return nil, false
	}
	done, err := g.cb.Allow()
	if err != nil {
		return nil, false
	}
	return func(failed bool) { done(failedErr(failed)) }, true
}

// errFlaky is a flaky call's failure.
var errFlaky = errors.New("503 Service Unavailable")

func failedErr(failed bool) error {
	if failed {
		return errFlaky
	}
	return nil
}

func (g *gobreakerTail) Trips() int { return g.hold.tripCount() }

// nemoTail is nemoGuard in the benchmark.
type nemoTail struct{ g *nemoGuard }

func (t nemoTail) reserve() (func(bool), bool) {
	probe, err := t.g.before()
	if err != nil {
		return nil, false
	}
	return func(failed bool) { t.g.after(probe, failedErr(failed)) }, true
}

func (t nemoTail) Trips() int { return t.g.Trips() }

// pendingDone is a call in flight in runTailGuard, by completion time.
type pendingDone struct {
	at     time.Duration
	done   func(failed bool)
	failed bool
}

type doneHeap []pendingDone

func (h doneHeap) Len() int           { return len(h) }
func (h doneHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h doneHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *doneHeap) Push(x any)        { *h = append(*h, x.(pendingDone)) }
func (h *doneHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// best reports, for scenario i, the configurations with 0 false trips
// that send the fewest calls to the dead dependency and that spend the
// fewest tokens per outage turn (ties share a place).
func (r *BaselineResults) best(i int) (dead, tokens []string) {
	minDead, minTok := -1, -1.0
	for j, b := range r.Configs {
		if r.falseTrips[j] > 0 {
			continue
		}
		w := r.rows[i][j]
		switch {
		case minDead < 0 || w.DeadCalls < minDead:
			minDead, dead = w.DeadCalls, []string{b.Name}
		case w.DeadCalls == minDead:
			dead = append(dead, b.Name)
		}
		switch {
		case minTok < 0 || w.TokensPerTurnMean < minTok:
			minTok, tokens = w.TokensPerTurnMean, []string{b.Name}
		case w.TokensPerTurnMean == minTok:
			tokens = append(tokens, b.Name)
		}
	}
	return dead, tokens
}

// trips and flaky return configuration name's false trips on the
// healthy-tail and the flaky benchmark.
func (r *BaselineResults) Trips(name string) int { return r.falseTrips[r.index(name)] }
func (r *BaselineResults) Flaky(name string) int { return r.flakyTrips[r.index(name)] }

func (r *BaselineResults) index(name string) int {
	for j, b := range r.Configs {
		if b.Name == name {
			return j
		}
	}
	panic("no configuration " + name)
}

// Row returns configuration name's row in scenario i.
func (r *BaselineResults) Row(i int, name string) Row { return r.rows[i][r.index(name)] }

// ReportBaselines writes the side-by-side table, which configuration is
// best in each scenario and, last, a summary line.
func ReportBaselines(out io.Writer, r *BaselineResults) {
	fmt.Fprintf(out, "baselines: the reference outage (%s down from minute %d to minute %d of %s) in mode fast (503 in 20ms) and hang (calls hang until the 5s timeout),\n",
		Dependency, int(OutageFrom.Minutes()), int(OutageTo.Minutes()), Simulated)
	fmt.Fprintf(out, "for the single agent (a turn every %s) and through the sub-agent chain (a turn every %s); false trips: the healthy-tail benchmark, %d calls per row, %d rows,\n",
		r.size.Every, r.size.ChainEvery, r.size.TailCalls, len(tailShapes)*len(tailRates))
	fmt.Fprintf(out, "and the flaky one (the same healthy dependency, %s, %g%% of its calls failing at random), %d calls per row, %d rows\n\n",
		flakyShape.Name, 100*FlakyErrorRate, r.size.TailCalls, len(tailRates))
	fmt.Fprintln(out, "| scenario | configuration | calls to the dead dependency | model calls per outage turn | tokens per outage turn | recovery | answers useful / degraded / error | false trips: healthy-tail / flaky |")
	fmt.Fprintln(out, "|---|---|--:|--:|--:|--:|--:|--:|")
	for i, sc := range BaselineScenarios {
		for j, b := range r.Configs {
			w := r.rows[i][j]
			trips := "— (no breaker)"
			if r.falseTrips[j] >= 0 {
				trips = fmt.Sprintf("%d / %d", r.falseTrips[j], r.flakyTrips[j])
			}
			fmt.Fprintf(out, "| %s | %s | %d | %.2f | %.0f | %s | %d / %d / %d | %s |\n", sc.Name, b.Name, w.DeadCalls,
				w.LLMPerTurnMean, w.TokensPerTurnMean, w.RecoveryString(), w.useful, w.degraded, w.fail, trips)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Model calls and tokens count every agent's (the root's and the researcher's in the chain), per turn started during the outage;")
	fmt.Fprintln(out, "tokens are the scripted models' usage metadata (a token per 4 bytes of the request's and the response's JSON);")
	fmt.Fprintln(out, "recovery is from the dependency's return to the first call that succeeded.")
	fmt.Fprintln(out)
	var sum []string
	for i, sc := range BaselineScenarios {
		dead, tok := r.best(i)
		d := r.Row(i, NameDefaults)
		fmt.Fprintf(out, "%s: fewest dead calls with 0 false trips: %s (%d); fewest tokens per outage turn: %s (%.0f); adkbreaker-defaults %d and %.0f\n",
			sc.Name, strings.Join(dead, ", "), r.Row(i, dead[0]).DeadCalls, strings.Join(tok, ", "), r.Row(i, tok[0]).TokensPerTurnMean, d.DeadCalls, d.TokensPerTurnMean)
		sum = append(sum, fmt.Sprintf("%s=%d/%.0f", strings.ReplaceAll(sc.Name, " ", "_"), d.DeadCalls, d.TokensPerTurnMean))
	}
	fmt.Fprintf(out, "summary: scenario=baselines adkbreaker_defaults_dead_calls/tokens_per_turn: %s false_trips_defaults=%d/%d\n",
		strings.Join(sum, " "), r.Trips(NameDefaults), r.Flaky(NameDefaults))
}
