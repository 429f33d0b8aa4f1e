package incident

import (
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// The false-trip benchmark (-scenario healthy-tail): a healthy dependency
// whose latency has a long tail, called a million times in virtual time
// through a breaker with the library's defaults (a zero Policy: the derived
// in-flight slowness threshold, 3 slow calls, the stall rule). Every call
// succeeds; a trip is a false trip.
const TailCalls = 1_000_000

// tailShape is one latency distribution of the benchmark.
type tailShape struct {
	Name string
	draw func(*rand.Rand) time.Duration
}

var tailShapes = []tailShape{
	{
		// Median 100 ms, p99 1 s: σ = ln 10 / z(0.99).
		Name: "lognormal median 100ms p99 1s",
		draw: func(r *rand.Rand) time.Duration {
			return time.Duration(float64(100*time.Millisecond) * math.Exp(math.Ln10/2.3263*r.NormFloat64()))
		},
	},
	{
		// A cache in front: 90% hits in 5 ms, 10% misses in 400 ms, each
		// with a ±20% spread (log-normal, σ 0.2).
		Name: "bimodal 5ms hit / 400ms miss (10% misses)",
		draw: func(r *rand.Rand) time.Duration {
			base := 5 * time.Millisecond
			if r.Float64() < 0.1 {
				base = 400 * time.Millisecond
			}
			return time.Duration(float64(base) * math.Exp(0.2*r.NormFloat64()))
		},
	},
}

var tailRates = []int{10, 200} // calls a second

// TailResult is one row of the benchmark.
type TailResult struct {
	shape      string
	perSecond  int
	calls      int
	Trips      int
	refused    int
	threshold  time.Duration
	p99        time.Duration // of the latencies drawn
	maxLatency time.Duration
	simulated  time.Duration
}

// tailCall is a call in flight, by completion time.
type tailCall struct {
	at  time.Duration
	res registry.Reservation
}

type tailHeap []tailCall

func (h tailHeap) Len() int           { return len(h) }
func (h tailHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h tailHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tailHeap) Push(x any)        { *h = append(*h, x.(tailCall)) }
func (h *tailHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// runTail drives calls calls, arriving as a Poisson process of perSecond
// a second, each returning a success after shape's latency, through a
// default breaker on a fake clock. It counts the breaker's trips.
func runTail(shape tailShape, perSecond, calls int, seed uint64) (TailResult, error) {
	clk := registrytest.NewFakeClock(epoch)
	reg, err := registry.New(registry.WithClock(clk), registry.WithRand(SeededRand()))
	if err != nil {
		return TailResult{}, err
	}
	b, err := reg.Get(Dependency)
	if err != nil {
		return TailResult{}, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(perSecond)))
	out := TailResult{shape: shape.Name, perSecond: perSecond, calls: calls}
	lat := make([]time.Duration, 0, calls)
	var pending tailHeap
	now := time.Duration(0)
	mean := float64(time.Second) / float64(perSecond)
	for range calls {
		now += time.Duration(rng.ExpFloat64() * mean)
		for len(pending) > 0 && pending[0].at <= now {
			c := heap.Pop(&pending).(tailCall)
			clk.Set(epoch.Add(c.at))
			c.res.Report(registry.Success, 0)
		}
		clk.Set(epoch.Add(now))
		res, d := b.Reserve()
		if !d.Allowed {
			out.refused++
			continue
		}
		l := shape.draw(rng)
		lat = append(lat, l)
		heap.Push(&pending, tailCall{at: now + l, res: res})
	}
	for len(pending) > 0 {
		c := heap.Pop(&pending).(tailCall)
		clk.Set(epoch.Add(c.at))
		c.res.Report(registry.Success, 0)
	}
	out.threshold = b.ContainCounts().SlowThreshold
	out.simulated = now
	out.Trips = int(b.Counts().Trips)
	out.p99, out.maxLatency = quantiles(lat)
	return out, nil
}

func quantiles(lat []time.Duration) (p99, top time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	return s[int(0.99*float64(len(s)-1))], s[len(s)-1]
}

// RunTails runs every shape at every rate, in parallel.
func RunTails(calls int) ([]TailResult, error) {
	type job struct {
		i     int
		shape tailShape
		rate  int
	}
	var jobs []job
	for _, sh := range tailShapes {
		for _, r := range tailRates {
			jobs = append(jobs, job{len(jobs), sh, r})
		}
	}
	out := make([]TailResult, len(jobs))
	errs := make([]error, len(jobs))
	done := make(chan struct{})
	for _, j := range jobs {
		go func() {
			out[j.i], errs[j.i] = runTail(j.shape, j.rate, calls, 17)
			done <- struct{}{}
		}()
	}
	for range jobs {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReportTails writes the benchmark's table and, last, false_trips=N.
func ReportTails(w io.Writer, rs []TailResult) {
	fmt.Fprintf(w, "healthy-tail: %d calls per row to a healthy %s in virtual time, Poisson arrivals, the library's default policy\n\n", TailCalls, Dependency)
	fmt.Fprintln(w, "| latency | calls/s | simulated | p99 / max latency drawn | derived threshold at the end | trips | calls refused |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
	total := 0
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %s | %s / %s | %s | %d | %d |\n", r.shape, r.perSecond, r.simulated.Round(time.Minute),
			roundDur(r.p99), roundDur(r.maxLatency), roundDur(r.threshold), r.Trips, r.refused)
		total += r.Trips
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.TrimSpace(`
Every call succeeds: a trip is a false trip. The calls outstanding past the
threshold are the tail's, each among calls that returned.`))
	fmt.Fprintf(w, "false_trips=%d\n", total)
}
