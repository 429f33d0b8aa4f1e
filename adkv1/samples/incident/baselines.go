package main

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

	"github.com/sony/gobreaker/v2"

	adkplugin "google.golang.org/adk/plugin"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// -scenario baselines: the same outage, in one run, through what a user
// would write instead of adkbreaker — nothing, ADK's retryandreflect,
// gobreaker with its defaults around the tool, NeMo Agent Toolkit's tool
// breaker settings — and adkbreaker with the library's defaults and with
// the incident's settings; in mode fast and hang, for the single agent
// and through the sub-agent chain, and the healthy-tail benchmark for the
// false trips each configuration's breaker makes.

// baseline is one configuration of the table.
type baseline struct {
	v variant // the same variant runs the single agent and the chain
	// tail builds the configuration's breaker for the false-trip
	// benchmark; nil: no breaker, nothing can trip.
	tail func(clk *registrytest.FakeClock) (tailGuard, error)
}

// The configurations' names.
const (
	nameGobreaker = "gobreaker-defaults"
	nameNemo      = "nemo-style"
	nameDefaults  = "adkbreaker-defaults"
	nameIncident  = "adkbreaker"
)

func noPlugins(*sim) ([]*adkplugin.Plugin, *registry.Registry, error) { return nil, nil, nil }

var baselines = []baseline{
	{v: variants[0]}, // none
	{v: variants[1]}, // retryandreflect
	{
		v: variant{name: nameGobreaker, plugins: noPlugins, guard: func(s *sim) toolGuard {
			return newGobreakerGuard(s, gobreaker.Settings{Name: "enrich"}) // every other setting gobreaker's default
		}},
		tail: func(clk *registrytest.FakeClock) (tailGuard, error) {
			return newGobreakerTail(clk, gobreaker.Settings{Name: "enrich"}), nil
		},
	},
	{
		v: variant{name: nameNemo, plugins: noPlugins, guard: func(s *sim) toolGuard { return newNemoGuard(s, "enrich") }},
		tail: func(clk *registrytest.FakeClock) (tailGuard, error) {
			return nemoTail{newNemoGuard(clk, "enrich")}, nil
		},
	},
	{
		v:    variants[3], // adkbreaker-defaults
		tail: func(clk *registrytest.FakeClock) (tailGuard, error) { return newRegistryTail(clk, registry.Policy{}) },
	},
	{
		v:    variants[2], // adkbreaker, the incident's settings
		tail: func(clk *registrytest.FakeClock) (tailGuard, error) { return newRegistryTail(clk, incidentPolicy()) },
	},
}

// baselineScenario is one column group: a mode, with or without the
// sub-agent.
type baselineScenario struct {
	name  string
	mode  string
	chain bool
}

var baselineScenarios = []baselineScenario{
	{name: "fast", mode: "fast"},
	{name: "hang", mode: "hang"},
	{name: "chain fast", mode: "fast", chain: true},
	{name: "chain hang", mode: "hang", chain: true},
}

// baselineSize is how much the run replays: the turn rates of the single
// agent and of the chain, and the false-trip benchmark's calls per row.
type baselineSize struct {
	every, chainEvery time.Duration
	tailCalls         int
}

// fullBaselines is -scenario baselines: the incident's and the chain's
// traffic, the benchmark's million calls per row.
var fullBaselines = baselineSize{every: turnEvery, chainEvery: chainTurnEvery, tailCalls: tailCalls}

// baselineResults is the table: rows[scenario][configuration], in the
// order of baselineScenarios and baselines; falseTrips (healthy-tail) and
// flakyTrips (flaky) per configuration (-1: no breaker).
type baselineResults struct {
	size       baselineSize
	configs    []baseline
	rows       [][]row
	falseTrips []int
	flakyTrips []int
}

// The flaky benchmark: what a breaker that trips on few consecutive
// failures costs elsewhere. A healthy dependency (the healthy-tail's
// log-normal latency) whose calls fail now and then, independently —
// 2%, a rate at which nobody would want it cut off. Every trip refuses a
// working dependency for the whole hold: a false trip.
const flakyErrorRate = 0.02

var flakyShape = tailShapes[0]

// runBaselines replays every scenario for every configuration of configs (a
// subset of baselines) and runs
// the false-trip benchmark for every configuration with a breaker, at
// most GOMAXPROCS at a time (each replay has its own virtual clock: the
// results do not depend on scheduling).
func runBaselines(size baselineSize, configs []baseline) (*baselineResults, error) {
	out := &baselineResults{size: size, configs: configs, rows: make([][]row, len(baselineScenarios)),
		falseTrips: make([]int, len(configs)), flakyTrips: make([]int, len(configs))}
	var jobs []func() error
	for i, sc := range baselineScenarios {
		out.rows[i] = make([]row, len(configs))
		for j, b := range configs {
			jobs = append(jobs, func() error {
				var r *result
				var err error
				if sc.chain {
					r, err = runChainEvery(sc.mode, size.chainEvery, b.v)
				} else {
					r, err = runEvery(sc.mode, healthyLatency, size.every, b.v)
				}
				if err != nil {
					return fmt.Errorf("%s, %s: %w", sc.name, b.v.name, err)
				}
				out.rows[i][j] = summarise(r)
				return nil
			})
		}
	}
	var tmu sync.Mutex
	for j, b := range configs {
		if b.tail == nil {
			out.falseTrips[j], out.flakyTrips[j] = -1, -1
			continue
		}
		for _, sh := range tailShapes {
			for _, rate := range tailRates {
				jobs = append(jobs, func() error {
					n, err := runTailGuard(sh, rate, size.tailCalls, 17, 0, b.tail)
					if err != nil {
						return fmt.Errorf("healthy-tail, %s: %w", b.v.name, err)
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
				n, err := runTailGuard(flakyShape, rate, size.tailCalls, 17, flakyErrorRate, b.tail)
				if err != nil {
					return fmt.Errorf("flaky, %s: %w", b.v.name, err)
				}
				tmu.Lock()
				out.flakyTrips[j] += n
				tmu.Unlock()
				return nil
			})
		}
	}
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range next {
				errs[k] = jobs[k]()
			}
		})
	}
	for k := range jobs {
		next <- k
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// tailGuard is a configuration's breaker in the false-trip benchmark.
type tailGuard interface {
	// reserve asks to start a call now; done reports its outcome.
	reserve() (done func(failed bool), ok bool)
	trips() int
}

// runTailGuard is runTail (tail.go) for any configuration's breaker: calls
// calls, Poisson arrivals of perSecond a second, each ending after shape's
// latency, a failure with probability errRate (0: every call succeeds);
// it returns the breaker's trips, every one false.
func runTailGuard(shape tailShape, perSecond, calls int, seed uint64, errRate float64, build func(*registrytest.FakeClock) (tailGuard, error)) (int, error) {
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
	return g.trips(), nil
}

// registryTail is adkbreaker's breaker (the registry's) with policy p.
type registryTail struct{ b *registry.Breaker }

func newRegistryTail(clk *registrytest.FakeClock, p registry.Policy) (tailGuard, error) {
	reg, err := registry.New(registry.WithClock(clk), registry.WithRand(seededRand()), registry.WithPolicy(dependency, p))
	if err != nil {
		return nil, err
	}
	b, err := reg.Get(dependency)
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

func (t registryTail) trips() int { return int(t.b.Counts().Trips) }

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

func (g *gobreakerTail) trips() int { return g.hold.tripCount() }

// nemoTail is nemoGuard in the benchmark.
type nemoTail struct{ g *nemoGuard }

func (t nemoTail) reserve() (func(bool), bool) {
	probe, err := t.g.before()
	if err != nil {
		return nil, false
	}
	return func(failed bool) { t.g.after(probe, failedErr(failed)) }, true
}

func (t nemoTail) trips() int { return t.g.trips() }

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
func (r *baselineResults) best(i int) (dead, tokens []string) {
	minDead, minTok := -1, -1.0
	for j, b := range r.configs {
		if r.falseTrips[j] > 0 {
			continue
		}
		w := r.rows[i][j]
		switch {
		case minDead < 0 || w.deadCalls < minDead:
			minDead, dead = w.deadCalls, []string{b.v.name}
		case w.deadCalls == minDead:
			dead = append(dead, b.v.name)
		}
		switch {
		case minTok < 0 || w.tokensPerTurnMean < minTok:
			minTok, tokens = w.tokensPerTurnMean, []string{b.v.name}
		case w.tokensPerTurnMean == minTok:
			tokens = append(tokens, b.v.name)
		}
	}
	return dead, tokens
}

// trips and flaky return configuration name's false trips on the
// healthy-tail and the flaky benchmark.
func (r *baselineResults) trips(name string) int { return r.falseTrips[r.index(name)] }
func (r *baselineResults) flaky(name string) int { return r.flakyTrips[r.index(name)] }

func (r *baselineResults) index(name string) int {
	for j, b := range r.configs {
		if b.v.name == name {
			return j
		}
	}
	panic("no configuration " + name)
}

// row returns configuration name's row in scenario i.
func (r *baselineResults) row(i int, name string) row { return r.rows[i][r.index(name)] }

// reportBaselines writes the side-by-side table, which configuration is
// best in each scenario and, last, a summary line.
func reportBaselines(out io.Writer, r *baselineResults) {
	fmt.Fprintf(out, "baselines: the reference outage (%s down from minute %d to minute %d of %s) in mode fast (503 in 20ms) and hang (calls hang until the 5s timeout),\n",
		dependency, int(outageFrom.Minutes()), int(outageTo.Minutes()), simulated)
	fmt.Fprintf(out, "for the single agent (a turn every %s) and through the sub-agent chain (a turn every %s); false trips: the healthy-tail benchmark, %d calls per row, %d rows,\n",
		r.size.every, r.size.chainEvery, r.size.tailCalls, len(tailShapes)*len(tailRates))
	fmt.Fprintf(out, "and the flaky one (the same healthy dependency, %s, %g%% of its calls failing at random), %d calls per row, %d rows\n\n",
		flakyShape.name, 100*flakyErrorRate, r.size.tailCalls, len(tailRates))
	fmt.Fprintln(out, "| scenario | configuration | calls to the dead dependency | model calls per outage turn | tokens per outage turn | recovery | answers useful / degraded / error | false trips: healthy-tail / flaky |")
	fmt.Fprintln(out, "|---|---|--:|--:|--:|--:|--:|--:|")
	for i, sc := range baselineScenarios {
		for j, b := range r.configs {
			w := r.rows[i][j]
			trips := "— (no breaker)"
			if r.falseTrips[j] >= 0 {
				trips = fmt.Sprintf("%d / %d", r.falseTrips[j], r.flakyTrips[j])
			}
			fmt.Fprintf(out, "| %s | %s | %d | %.2f | %.0f | %s | %d / %d / %d | %s |\n", sc.name, b.v.name, w.deadCalls,
				w.llmPerTurnMean, w.tokensPerTurnMean, w.recoveryString(), w.useful, w.degraded, w.fail, trips)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Model calls and tokens count every agent's (the root's and the researcher's in the chain), per turn started during the outage;")
	fmt.Fprintln(out, "tokens are the scripted models' usage metadata (a token per 4 bytes of the request's and the response's JSON);")
	fmt.Fprintln(out, "recovery is from the dependency's return to the first call that succeeded.")
	fmt.Fprintln(out)
	var sum []string
	for i, sc := range baselineScenarios {
		dead, tok := r.best(i)
		d := r.row(i, nameDefaults)
		fmt.Fprintf(out, "%s: fewest dead calls with 0 false trips: %s (%d); fewest tokens per outage turn: %s (%.0f); adkbreaker-defaults %d and %.0f\n",
			sc.name, strings.Join(dead, ", "), r.row(i, dead[0]).deadCalls, strings.Join(tok, ", "), r.row(i, tok[0]).tokensPerTurnMean, d.deadCalls, d.tokensPerTurnMean)
		sum = append(sum, fmt.Sprintf("%s=%d/%.0f", strings.ReplaceAll(sc.name, " ", "_"), d.deadCalls, d.tokensPerTurnMean))
	}
	fmt.Fprintf(out, "summary: scenario=baselines adkbreaker_defaults_dead_calls/tokens_per_turn: %s false_trips_defaults=%d/%d\n",
		strings.Join(sum, " "), r.trips(nameDefaults), r.flaky(nameDefaults))
}
