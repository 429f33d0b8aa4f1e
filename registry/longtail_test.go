package registry_test

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// pendingCalls is a min-heap of in-flight calls by completion time.
type pendingCalls []pendingCall

type pendingCall struct {
	at  time.Duration
	res registry.Reservation
}

func (p pendingCalls) Len() int           { return len(p) }
func (p pendingCalls) Less(i, j int) bool { return p[i].at < p[j].at }
func (p pendingCalls) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *pendingCalls) Push(x any)        { *p = append(*p, x.(pendingCall)) }
func (p *pendingCalls) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// replayLatencies drives b in virtual time: a call every gap for dur, each
// succeeding after latency(); it returns the calls refused (the breaker
// opened on a healthy dependency).
func replayLatencies(t *testing.T, b *registry.Breaker, set func(time.Duration), gap, dur time.Duration, latency func() time.Duration) (refused int) {
	t.Helper()
	var pending pendingCalls
	for now := time.Duration(0); now < dur; now += gap {
		for len(pending) > 0 && pending[0].at <= now {
			c := heap.Pop(&pending).(pendingCall)
			set(c.at)
			c.res.Report(success, 0)
		}
		set(now)
		res, d := b.Reserve()
		if !d.Allowed {
			refused++
			continue
		}
		heap.Push(&pending, pendingCall{at: now + latency(), res: res})
	}
	for len(pending) > 0 {
		c := heap.Pop(&pending).(pendingCall)
		set(c.at)
		c.res.Report(success, 0)
	}
	return refused
}

// A healthy dependency with a long latency tail (log-normal: median 200 ms,
// σ 1.2: p99 ≈ 3.3 s, mean ≈ 400 ms) at 2, 20 and 100 calls a second, for
// an hour each, under the default policy (derived in-flight slowness
// threshold): the detector never trips it. A few tail calls outstanding at
// once are not a hang; a hang is when most of the calls that started then
// are still outstanding (review finding: the derived threshold alone
// tripped such a tool about ten times an hour at 20 calls a second,
// refusing 10% of its calls). Then the same dependency hangs: it still
// trips within a few thresholds, long before a call could time out.
func TestLongTailIsNotAHang(t *testing.T) {
	for _, perSecond := range []int{2, 20, 100} {
		t.Run(strconv.Itoa(perSecond)+"/s", func(t *testing.T) {
			clk, r, b := newBreaker(t, registry.Policy{})
			rec := record(t, r)
			rng := rand.New(rand.NewPCG(7, uint64(perSecond)))
			lognormal := func() time.Duration {
				return time.Duration(float64(200*time.Millisecond) * math.Exp(1.2*rng.NormFloat64()))
			}
			set := func(d time.Duration) { clk.Set(t0.Add(d)) }
			gap := time.Second / time.Duration(perSecond)
			refused := replayLatencies(t, b, set, gap, time.Hour, lognormal)
			cc := b.ContainCounts()
			if got := rec.briefs(t); len(got) != 0 || refused != 0 {
				t.Fatalf("a healthy long-tail dependency was tripped: %d transitions (first %v), %d calls refused, threshold %v, %d slow verdicts",
					len(got), got[:min(len(got), 2)], refused, cc.SlowThreshold, cc.SlowVerdicts)
			}
			// The hang: from now on no call returns.
			start := time.Hour + time.Minute
			var at time.Duration
			for at = start; at < start+time.Minute; at += gap {
				set(at)
				if _, d := b.Reserve(); !d.Allowed {
					break
				}
			}
			if got := rec.briefs(t); len(got) != 1 || !strings.Contains(got[0], "slow_calls") {
				t.Fatalf("the hang: transitions %v, want one slow_calls trip", got)
			}
			if took := at - start; took > 3*cc.SlowThreshold {
				t.Errorf("the hang tripped after %v, threshold %v", took, cc.SlowThreshold)
			}
		})
	}
}
