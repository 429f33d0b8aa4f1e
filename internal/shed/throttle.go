package shed

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

const throttleBuckets = 10

// throttleControlEvery makes every fifth bucket a control bucket: nothing is
// shed in it, so the throttle sees what the endpoint accepts of the full
// offered load and can tell whether shedding costs accepted calls.
const throttleControlEvery = 5

// Throttle controller constants: the shed probability grows by
// throttleStep when the buckets that shed accepted as large a share of
// their offered calls as the control buckets, and halves when they
// accepted a smaller share beyond noise (throttleDrop standard errors);
// it grows only once the comparison is precise enough
// (throttleMaxStdErr), and at least throttleMinCalls calls of each kind
// were offered in the window.
const (
	throttleStep      = 0.05
	throttleDrop      = 0.5
	throttleMaxStdErr = 0.05
	throttleMinCalls  = 10
	throttleQuietSent = 5
)

// Throttle is one endpoint's adaptive throttle: offered, sent, accepted
// and refused calls in a ring of buckets over the trailing window, and the
// shed probability its controller learned.
//
// SRE's formula alone, max(0, (requests − K·accepts)/(requests + 1)) with
// shed calls counted as requests, assumes the endpoint accepts about the
// same number of calls however many it is sent (a capacity: a token
// bucket, an overloaded backend). Under a storm that refuses a share of
// calls whatever the load (a shared quota, other tenants), shedding lowers
// the accepts with the requests, and any refused share above 1 − 1/K ran
// the probability to its cap and kept it there after the storm. So the
// formula is only a cap here, computed over calls that were sent (and over
// control buckets, where nothing is shed): it can no longer feed on its own
// shedding. Below the cap, the throttle sheds only while shedding costs no
// accepted calls: it compares the accepted share of offered calls in the
// buckets that shed with that of the control buckets. Under a storm that
// refuses regardless of load the two differ by the shed share and the
// probability stays near zero; under a capacity limit they do not and it
// grows to the cap. A bucket whose sent calls were all accepted ends the
// shedding at once.
type Throttle struct {
	k, maxP float64
	bucket  time.Duration
	random  func() float64

	mu    sync.Mutex
	slot  [throttleBuckets]int64 // bucket number (time / bucket) each slot holds
	req   [throttleBuckets]float64
	sent  [throttleBuckets]float64
	acc   [throttleBuckets]float64
	ref   [throttleBuckets]float64
	last  int64         // the newest bucket number seen
	p     float64       // the controller's shed probability
	shed  atomic.Uint64 // calls shed (Shed)
	lastP atomic.Uint64 // math.Float64bits of the last probability computed
}

// NewThrottle returns a throttle that lets an endpoint be sent k times the
// calls it accepted over window, shedding at most maxP of the calls; random
// gives uniform numbers in [0, 1) (nil: math/rand/v2), called with the
// throttle's lock held.
func NewThrottle(k, maxP float64, w time.Duration, random func() float64) *Throttle {
	th := &Throttle{k: k, maxP: maxP, random: random, last: math.MinInt64}
	th.bucket = w / throttleBuckets
	if th.random == nil {
		th.random = rand.Float64
	}
	for i := range th.slot {
		th.slot[i] = math.MinInt64
	}
	return th
}

func throttleControl(n int64) bool { return n%throttleControlEvery == 0 }

// cur returns the ring index for now, stepping the controller when a bucket
// has ended and clearing a slot that held an older bucket. Caller holds mu.
func (th *Throttle) cur(now time.Time) int {
	n := now.UnixNano() / int64(th.bucket)
	if n > th.last {
		if th.last != math.MinInt64 {
			if n-th.last > throttleBuckets {
				th.p = 0 // a window without calls: start afresh
			} else {
				th.stepLocked(th.last)
			}
		}
		th.last = n
	}
	i := int(uint64(n) % throttleBuckets)
	if th.slot[i] != n {
		th.slot[i], th.req[i], th.sent[i], th.acc[i], th.ref[i] = n, 0, 0, 0, 0
	}
	return i
}

// sums adds up the window ending at bucket number n: control buckets'
// offered and accepted calls, the other buckets' offered and accepted
// calls, and every bucket's sent and accepted calls. Caller holds mu.
type throttleSums struct{ cReq, cAcc, tReq, tAcc, sent, acc float64 }

func (th *Throttle) sumsLocked(n int64) throttleSums {
	var s throttleSums
	for i := range th.slot {
		b := th.slot[i]
		if b <= n-throttleBuckets || b > n {
			continue
		}
		if throttleControl(b) {
			s.cReq += th.req[i]
			s.cAcc += th.acc[i]
		} else {
			s.tReq += th.req[i]
			s.tAcc += th.acc[i]
		}
		s.sent += th.sent[i]
		s.acc += th.acc[i]
	}
	return s
}

// capLocked is SRE's probability over calls that were sent, and over the
// control buckets (offered = sent there): the most the throttle may shed.
func (th *Throttle) capLocked(s throttleSums) float64 {
	p := max(0, (s.sent-th.k*s.acc)/(s.sent+1))
	if s.cReq > 0 {
		p = max(p, (s.cReq-th.k*s.cAcc)/(s.cReq+1))
	}
	return min(p, th.maxP)
}

// stepLocked moves the controller at the end of bucket number n.
func (th *Throttle) stepLocked(n int64) {
	i := int(uint64(n) % throttleBuckets)
	if th.slot[i] == n && th.sent[i] >= throttleQuietSent && th.ref[i] == 0 {
		th.p = 0 // every call sent in the bucket was accepted: no storm
		return
	}
	s := th.sumsLocked(n)
	if s.cReq < throttleMinCalls || s.tReq < throttleMinCalls {
		return
	}
	ac, at := s.cAcc/s.cReq, s.tAcc/s.tReq
	se := math.Sqrt(ac*(1-ac)/s.cReq + at*(1-at)/s.tReq)
	d := ac - at
	switch {
	case d > throttleDrop*se && d > 0:
		th.p /= 2
	case d <= 0 && se <= throttleMaxStdErr:
		th.p = min(th.p+throttleStep, th.capLocked(s))
	}
	th.p = min(th.p, th.capLocked(s))
}

// probLocked is the shed probability in bucket number n. Caller holds mu.
func (th *Throttle) probLocked(n int64) float64 {
	if throttleControl(n) || th.p <= 0 {
		return 0
	}
	return min(th.p, th.capLocked(th.sumsLocked(n)))
}

// admit counts an offered call and reports whether to send it (false: shed).
func (th *Throttle) Admit(now time.Time) bool {
	th.mu.Lock()
	i := th.cur(now)
	p := th.probLocked(th.slot[i])
	th.lastP.Store(math.Float64bits(p))
	th.req[i]++
	send := p <= 0 || th.random() >= p
	if send {
		th.sent[i]++
	}
	th.mu.Unlock()
	if !send {
		th.shed.Add(1)
	}
	return send
}

// unsend takes back a call admit let through that was not sent after all
// (its breaker refused it).
func (th *Throttle) Unsend(now time.Time) {
	th.mu.Lock()
	if i := th.cur(now); th.req[i] > 0 {
		th.req[i]--
		th.sent[i] = max(0, th.sent[i]-1)
	}
	th.mu.Unlock()
}

// answered counts a sent call's answer: refused for its rate (429), or
// accepted (anything else).
func (th *Throttle) Answered(now time.Time, refused bool) {
	th.mu.Lock()
	i := th.cur(now)
	if refused {
		th.ref[i]++
	} else {
		th.acc[i]++
	}
	th.mu.Unlock()
}

// probability is the shed probability outside control buckets now.
func (th *Throttle) Probability(now time.Time) float64 {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.cur(now)
	n := now.UnixNano() / int64(th.bucket)
	p := 0.0
	if th.p > 0 {
		p = min(th.p, th.capLocked(th.sumsLocked(n)))
	}
	th.lastP.Store(math.Float64bits(p))
	return p
}

// Shed returns how many calls the throttle has shed.
func (th *Throttle) Shed() uint64 { return th.shed.Load() }
