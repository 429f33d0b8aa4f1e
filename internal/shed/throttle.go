package shed

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

const throttleBuckets = 10

// throttleControlEvery makes every fifth bucket a control bucket once the
// throttle sheds: nothing is shed in it, so the throttle keeps seeing what
// the endpoint accepts of the full offered load and can tell whether
// shedding costs accepted calls. In a trial every other bucket is one.
const throttleControlEvery = 5

// Throttle controller constants.
const (
	// throttlePower: the throttle decides whether shedding costs accepted
	// calls once the cost a load-independent storm would show (the shed
	// share times the accepted share) is this many standard errors of the
	// comparison; then it sheds if the cost seen is under half of that.
	throttlePower = 2.5
	// throttleMinCalls: calls of each kind (control, shed buckets) a
	// decision needs at least.
	throttleMinCalls = 10
	// throttleQuietSent: a bucket with at least this many calls sent and
	// none refused ends the shedding (the storm is over).
	throttleQuietSent = 5
	// throttleTrialMin: a trial starts once SRE's cap is at least this;
	// below it, shedding saves too few 429s to be worth one.
	throttleTrialMin = 0.1
	// throttleHold is how long, in buckets, the throttle waits before a
	// new trial once shedding was found to cost accepted calls (two
	// windows); the wait doubles on each such finding during a storm, up
	// to throttleMaxHold.
	throttleHold    = 2 * throttleBuckets
	throttleMaxHold = 32 * throttleBuckets
)

// throttleMode is what the controller is doing.
type throttleMode uint8

const (
	throttleOff   throttleMode = iota // nothing shed
	throttleTrial                     // every other bucket sheds: does shedding cost accepted calls?
	throttleOn                        // it does not: every bucket but the control ones sheds
)

// Throttle is one endpoint's adaptive throttle: offered, sent, accepted
// and refused calls in a ring of buckets over the trailing window, and what
// its controller learned of the storm.
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
// shedding.
//
// Below the cap, the throttle sheds only once it has seen that shedding
// costs no accepted calls, by an experiment. Once SRE's formula over the
// latest bucket reaches throttleTrialMin, a trial sheds that share (then
// the formula over the trial's buckets) in every other bucket, and
// compares the accepted share of offered calls in the buckets that shed
// with that of the others. A storm that refuses regardless of load shows
// the shed share's worth of accepted calls lost (the shed share times the
// accepted share); a capacity limit shows none. The trial decides once that
// loss would be clear of the noise (throttlePower standard errors), at most
// a window after it began: no loss, and the throttle sheds the cap's share
// (over the buckets since the trial began) in every bucket but the control
// ones (every fifth), comparing the same way all along; a loss (or no
// decision), and it stops shedding and waits two windows before the next
// trial, twice as long after each further loss. Stepping the probability on
// a small shed share (as it did before) let noise grow the share to 5–10 %
// of the calls of a storm that did not depend on the load: at a few percent
// the two kinds of buckets differ by less than the noise. A bucket whose
// sent calls were all accepted ends the shedding at once.
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
	sheds [throttleBuckets]bool // the bucket sheds (not a control bucket)
	last  int64                 // the newest bucket number seen
	mode  throttleMode
	p     float64 // the shed probability of the buckets that shed
	since int64   // the bucket number the trial began with
	hold  int64   // no trial before this bucket number
	wait  int64   // the next hold, in buckets
	shed  atomic.Uint64
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
	th.resetLocked()
	return th
}

// resetLocked forgets the storm: nothing shed, a trial allowed at once.
func (th *Throttle) resetLocked() {
	th.mode, th.p, th.hold, th.wait = throttleOff, 0, math.MinInt64, throttleHold
}

// shedsIn reports whether bucket number n sheds, in the current mode.
func (th *Throttle) shedsIn(n int64) bool {
	switch th.mode {
	case throttleTrial:
		return (n-th.since)%2 == 0
	case throttleOn:
		return n%throttleControlEvery != 0
	}
	return false
}

// cur returns the ring index for now, stepping the controller when a bucket
// has ended and clearing a slot that held an older bucket. Caller holds mu.
func (th *Throttle) cur(now time.Time) int {
	n := now.UnixNano() / int64(th.bucket)
	if n > th.last {
		if th.last != math.MinInt64 {
			if n-th.last > throttleBuckets {
				th.resetLocked() // a window without calls: start afresh
			} else {
				th.stepLocked(th.last)
			}
		}
		th.last = n
	}
	i := int(uint64(n) % throttleBuckets)
	if th.slot[i] != n {
		th.slot[i], th.req[i], th.sent[i], th.acc[i], th.ref[i] = n, 0, 0, 0, 0
		th.sheds[i] = th.shedsIn(n)
	}
	return i
}

// throttleSums adds up buckets: those that did not shed (control) and those
// that did, offered and accepted calls, the latter's sent calls, and every
// bucket's sent and accepted calls.
type throttleSums struct{ cReq, cAcc, tReq, tSent, tAcc, sent, acc float64 }

// sumsLocked adds up the buckets numbered from to n, within the window
// ending at n. Caller holds mu.
func (th *Throttle) sumsLocked(from, n int64) throttleSums {
	var s throttleSums
	from = max(from, n-throttleBuckets+1)
	for i := range th.slot {
		b := th.slot[i]
		if b < from || b > n {
			continue
		}
		if th.sheds[i] {
			s.tReq += th.req[i]
			s.tSent += th.sent[i]
			s.tAcc += th.acc[i]
		} else {
			s.cReq += th.req[i]
			s.cAcc += th.acc[i]
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

// throttleVerdict is what a comparison of the buckets that shed with the
// others says.
type throttleVerdict uint8

const (
	verdictNone  throttleVerdict = iota // too few calls, or too little shed, to tell
	verdictFree                         // shedding costs no accepted calls: a capacity limit
	verdictCosts                        // it costs about what it sheds: a storm that does not depend on the load
)

// verdict compares the accepted share of offered calls in the buckets that
// shed with that of the others. If the endpoint refuses a share of the
// calls whatever the load, the buckets that shed lose the shed share of
// what the others accept; under a capacity limit they lose nothing.
func (s throttleSums) verdict() throttleVerdict {
	if s.cReq < throttleMinCalls || s.tReq < throttleMinCalls {
		return verdictNone
	}
	ac, at := s.cAcc/s.cReq, s.tAcc/s.tReq
	loss := (1 - s.tSent/s.tReq) * ac // what a load-independent storm loses
	se := math.Sqrt(ac*(1-ac)/s.cReq + at*(1-at)/s.tReq)
	if loss <= 0 || loss < throttlePower*se {
		return verdictNone
	}
	if ac-at < loss/2 {
		return verdictFree
	}
	return verdictCosts
}

// backOffLocked stops shedding after a trial that found it costly (or
// found nothing), and sets when the next trial may begin.
func (th *Throttle) backOffLocked(n int64) {
	th.mode, th.p = throttleOff, 0
	th.hold = n + 1 + th.wait
	th.wait = min(2*th.wait, throttleMaxHold)
}

// stepLocked moves the controller at the end of bucket number n.
func (th *Throttle) stepLocked(n int64) {
	i := int(uint64(n) % throttleBuckets)
	if th.slot[i] == n && th.sent[i] >= throttleQuietSent && th.ref[i] == 0 {
		th.resetLocked() // every call sent in the bucket was accepted: no storm
		return
	}
	cp := th.capLocked(th.sumsLocked(n-throttleBuckets+1, n))
	switch th.mode {
	case throttleOff:
		// The trial sheds what SRE's formula gives over the bucket that
		// just ended (nothing was shed in it), not over the window, which
		// lags behind a storm that has just begun: the larger the share
		// shed, the sooner (and the cheaper) the comparison tells.
		if last := th.capLocked(th.sumsLocked(n, n)); cp > 0 && last >= throttleTrialMin && n+1 >= th.hold {
			th.mode, th.since, th.p = throttleTrial, n+1, last
		}
	case throttleTrial:
		switch th.sumsLocked(th.since, n).verdict() {
		case verdictFree:
			th.mode, th.p = throttleOn, th.stormCapLocked(n)
		case verdictCosts:
			th.backOffLocked(n)
		default:
			if cp <= 0 || n+1-th.since >= throttleBuckets {
				th.backOffLocked(n) // no verdict within a window
				break
			}
			th.p = th.stormCapLocked(n)
		}
	case throttleOn:
		switch {
		case cp <= 0:
			th.mode, th.p = throttleOff, 0
		case th.sumsLocked(th.since, n).verdict() == verdictCosts:
			th.backOffLocked(n)
		default:
			th.p = th.stormCapLocked(n)
		}
	}
}

// stormCapLocked is the cap over the buckets since the one before the
// trial began (within the window): those of the storm, not the healthy
// ones before it, which the window may still hold. Caller holds mu.
func (th *Throttle) stormCapLocked(n int64) float64 {
	return th.capLocked(th.sumsLocked(th.since-1, n))
}

// probLocked is the shed probability in the bucket in slot i, numbered n.
// Caller holds mu.
func (th *Throttle) probLocked(i int, n int64) float64 {
	if !th.sheds[i] || th.p <= 0 {
		return 0
	}
	return th.levelLocked(n)
}

// levelLocked is the shed probability of the buckets that shed, in bucket
// number n: a trial's own, or once on, at most the window's cap. Caller
// holds mu.
func (th *Throttle) levelLocked(n int64) float64 {
	switch th.mode {
	case throttleTrial:
		return th.p
	case throttleOn:
		return min(th.p, th.stormCapLocked(n))
	}
	return 0
}

// Admit counts an offered call and reports whether to send it (false: shed).
func (th *Throttle) Admit(now time.Time) bool {
	th.mu.Lock()
	i := th.cur(now)
	p := th.probLocked(i, th.slot[i])
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

// Unsend takes back a call Admit let through that was not sent after all
// (its breaker refused it).
func (th *Throttle) Unsend(now time.Time) {
	th.mu.Lock()
	if i := th.cur(now); th.req[i] > 0 {
		th.req[i]--
		th.sent[i] = max(0, th.sent[i]-1)
	}
	th.mu.Unlock()
}

// Answered counts a sent call's answer: refused for its rate (429), or
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

// Probability is the shed probability of the buckets that shed now (0 while
// the throttle sheds nothing); control buckets shed nothing.
func (th *Throttle) Probability(now time.Time) float64 {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.cur(now)
	p := th.levelLocked(now.UnixNano() / int64(th.bucket))
	th.lastP.Store(math.Float64bits(p))
	return p
}

// Shed returns how many calls the throttle has shed.
func (th *Throttle) Shed() uint64 { return th.shed.Load() }
