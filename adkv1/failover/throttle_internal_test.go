package failover

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/shed"
)

// throttleSim offers perSecond calls a second for d to a throttle in front
// of an endpoint that refuses according to refuse (given the time and
// whether the call was sent), and returns the share shed and the share
// that ended up elsewhere than the endpoint (shed or refused).
func throttleSim(th *shed.Throttle, start time.Time, d time.Duration, perSecond int, refuse func(now time.Time) bool) (shed, away float64) {
	n := int(d.Seconds()) * perSecond
	var s, a int
	for i := range n {
		now := start.Add(time.Duration(i) * time.Second / time.Duration(perSecond))
		if !th.Admit(now) {
			s++
			a++
			continue
		}
		r := refuse(now)
		if r {
			a++
		}
		th.Answered(now, r)
	}
	return float64(s) / float64(n), float64(a) / float64(n)
}

// The throttle sheds about the excess of a capacity limit, next to nothing
// of a storm that refuses a share whatever the load (shedding there only
// adds to the fallback's share: SRE's formula ran to its cap), and lets go
// within seconds of either storm's end.
func TestThrottleStormShapes(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, q := range []float64{0.1, 1.0 / 3, 0.5} {
		rng := rand.New(rand.NewPCG(7, uint64(q*100)))
		th := newThrottle(Throttle{}, rng.Float64)
		shed, away := throttleSim(th, start, 3*time.Minute, 30, func(time.Time) bool { return rng.Float64() < q })
		after, _ := throttleSim(th, start.Add(3*time.Minute), 30*time.Second, 30, func(time.Time) bool { return false })
		t.Logf("load-independent %.0f%%: shed %.1f%%, away %.1f%%, shed in the 30 s after %.1f%%", 100*q, 100*shed, 100*away, 100*after)
		if away > q+0.04 {
			t.Errorf("load-independent %.0f%%: %.1f%% of calls away from the endpoint, want at most %.0f%%", 100*q, 100*away, 100*(q+0.04))
		}
		if after > 0.02 {
			t.Errorf("load-independent %.0f%%: shed %.1f%% in the 30 s after the storm", 100*q, 100*after)
		}
	}
	for _, q := range []float64{1.0 / 3, 0.5} {
		rng := rand.New(rand.NewPCG(8, uint64(q*100)))
		th := newThrottle(Throttle{}, rng.Float64)
		capacity := 30 * (1 - q)
		tokens, last := 5.0, start
		bucket := func(now time.Time) bool {
			tokens = min(5, tokens+now.Sub(last).Seconds()*capacity)
			last = now
			if tokens >= 1 {
				tokens--
				return false
			}
			return true
		}
		shed, away := throttleSim(th, start, 3*time.Minute, 30, bucket)
		after, _ := throttleSim(th, start.Add(3*time.Minute), 30*time.Second, 30, func(time.Time) bool { return false })
		t.Logf("capacity %.0f%% short: shed %.1f%%, away %.1f%%, shed in the 30 s after %.1f%%", 100*q, 100*shed, 100*away, 100*after)
		if shed < q/4 {
			t.Errorf("capacity %.0f%% short: shed %.1f%%, want at least a quarter of the excess", 100*q, 100*shed)
		}
		if away > q+0.04 {
			t.Errorf("capacity %.0f%% short: %.1f%% away, want about the excess", 100*q, 100*away)
		}
		if after > 0.02 {
			t.Errorf("capacity %.0f%% short: shed %.1f%% in the 30 s after the storm", 100*q, 100*after)
		}
	}
}
