package failover

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Throttle configures client-side adaptive throttling of one endpoint
// (Endpoint.Throttle), after Google SRE's "Handling Overload": the Model
// sends a share of the calls meant for the endpoint straight to the next
// endpoint, without calling this one, while the endpoint refuses calls for
// its rate (429) and shedding costs it no accepted calls.
//
// Over a trailing Window the Model counts the calls it meant to send to the
// endpoint (offered), those it sent, and those the endpoint accepted (every
// answer that is not a rate-limit refusal). SRE's probability
//
//	max(0, (requests − K·accepts) / (requests + 1)), at most MaxRejectProbability
//
// is only a cap, computed over sent calls and over control buckets (every
// fifth bucket of the window, in which nothing is shed): counting shed calls
// as requests that can never be accepts made it run to its cap under a
// storm that refuses a share of the calls whatever the load. Below the cap
// the probability grows while the buckets that shed accept as large a share
// of their offered calls as the control buckets (a capacity limit: what is
// shed would have been refused), halves when they accept less (shedding
// turns away calls the endpoint would have answered: a storm that does not
// depend on the load, left to per-call failover), and drops to 0 after a
// bucket in which every sent call was accepted. It needs about 20 calls a
// second with the default Window before it sheds anything; lengthen Window
// for less traffic.
//
// Shed calls never reach the endpoint's breaker: they are not failures, and
// a storm that is not an outage never opens it. A call is shed only while
// the breaker is closed and a later endpoint of the chain can be tried now;
// the breaker keeps its job for outages (an endpoint that refuses every
// call it is sent, or fails otherwise).
//
// Only rate-limit answers (429, including an exhausted quota) count as
// refusals: a 5xx, a timeout or a transport error counts as accepted, so
// the throttle never hides an outage from the breaker.
//
// The zero Throttle is the defaults. See docs/failover.md for the measured
// effect and the choice of K.
type Throttle struct {
	// K is how many times the accepted calls the endpoint may be sent (the
	// cap's K). Above 1 the endpoint keeps seeing more than it accepted,
	// which is how the throttle notices it recover; the closer to 1, the
	// fewer calls pay a 429 round trip under a capacity limit. If 0,
	// DefaultThrottleK. In (1, 10].
	K float64
	// Window is the trailing window over which calls are counted, in ten
	// buckets (two of them control buckets). If 0, DefaultThrottleWindow.
	// In [1s, 1h].
	Window time.Duration
	// MaxRejectProbability caps the probability of shedding a call, so the
	// endpoint always sees some calls. (Under sustained exhaustion nothing
	// is shed, and RetryHintFailures refusals open its breaker.) If 0,
	// DefaultThrottleMaxRejectProbability. In (0, 1].
	MaxRejectProbability float64
}

// Throttle defaults.
const (
	// DefaultThrottleK is Throttle.K's default. Google SRE suggests 2 for
	// a backend whose clients have nowhere else to go; with a fallback
	// endpoint a shed call is served at once, so the default is lower: the
	// endpoint is sent 1.2 times what it accepts.
	DefaultThrottleK = 1.2
	// DefaultThrottleWindow is Throttle.Window's default.
	DefaultThrottleWindow = 30 * time.Second
	// DefaultThrottleMaxRejectProbability is Throttle.MaxRejectProbability's
	// default.
	DefaultThrottleMaxRejectProbability = 0.9
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

func (t Throttle) validate(p string) []error {
	var errs []error
	if t.K != 0 && !(t.K > 1 && t.K <= 10) {
		errs = append(errs, fmt.Errorf("%s.k: must be in (1, 10], got %v (at 1 or below the throttle never notices the endpoint recover)", p, t.K))
	}
	if t.Window != 0 && (t.Window < time.Second || t.Window > time.Hour) {
		errs = append(errs, fmt.Errorf("%s.window: must be in [1s, 1h], got %s", p, t.Window))
	}
	if t.MaxRejectProbability != 0 && !(t.MaxRejectProbability > 0 && t.MaxRejectProbability <= 1) {
		errs = append(errs, fmt.Errorf("%s.max_reject_probability: must be in (0, 1], got %v", p, t.MaxRejectProbability))
	}
	return errs
}

// throttle is one endpoint's adaptive throttle: offered, sent, accepted
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
type throttle struct {
	k, maxP float64
	bucket  time.Duration
	random  func() float64

	mu    sync.Mutex
	slot  [throttleBuckets]int64 // bucket number (time / bucket) each slot holds
	req   [throttleBuckets]float64
	sent  [throttleBuckets]float64
	acc   [throttleBuckets]float64
	ref   [throttleBuckets]float64
	last  int64   // the newest bucket number seen
	p     float64 // the controller's shed probability
	shed  atomic.Uint64
	lastP atomic.Uint64 // math.Float64bits of the last probability computed
}

func newThrottle(t Throttle, random func() float64) *throttle {
	th := &throttle{k: t.K, maxP: t.MaxRejectProbability, random: random, last: math.MinInt64}
	if th.k == 0 {
		th.k = DefaultThrottleK
	}
	if th.maxP == 0 {
		th.maxP = DefaultThrottleMaxRejectProbability
	}
	w := t.Window
	if w == 0 {
		w = DefaultThrottleWindow
	}
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
func (th *throttle) cur(now time.Time) int {
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

func (th *throttle) sumsLocked(n int64) throttleSums {
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
func (th *throttle) capLocked(s throttleSums) float64 {
	p := max(0, (s.sent-th.k*s.acc)/(s.sent+1))
	if s.cReq > 0 {
		p = max(p, (s.cReq-th.k*s.cAcc)/(s.cReq+1))
	}
	return min(p, th.maxP)
}

// stepLocked moves the controller at the end of bucket number n.
func (th *throttle) stepLocked(n int64) {
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
func (th *throttle) probLocked(n int64) float64 {
	if throttleControl(n) || th.p <= 0 {
		return 0
	}
	return min(th.p, th.capLocked(th.sumsLocked(n)))
}

// admit counts an offered call and reports whether to send it (false: shed).
func (th *throttle) admit(now time.Time) bool {
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
func (th *throttle) unsend(now time.Time) {
	th.mu.Lock()
	if i := th.cur(now); th.req[i] > 0 {
		th.req[i]--
		th.sent[i] = max(0, th.sent[i]-1)
	}
	th.mu.Unlock()
}

// answered counts a sent call's answer: refused for its rate (429), or
// accepted (anything else).
func (th *throttle) answered(now time.Time, refused bool) {
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
func (th *throttle) probability(now time.Time) float64 {
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

// ThrottleStatus is a point-in-time view of one endpoint's throttle.
type ThrottleStatus struct {
	// RejectProbability is the probability that a call arriving now is sent
	// straight to the next endpoint.
	RejectProbability float64
	// Rejections counts the calls shed since the Model was built.
	Rejections uint64
}

// WithThrottleRandom sets the random source of every endpoint's throttle:
// uniformly distributed numbers in [0, 1), called with the throttle's lock
// held (so a seeded math/rand source needs no lock of its own). Default
// math/rand/v2's Float64. Tests and simulations seed it.
func WithThrottleRandom(f func() float64) Option {
	return optionFunc(func(s *settings) {
		if f == nil {
			s.errs = append(s.errs, errors.New("throttle random: must not be nil"))
			return
		}
		s.random = f
	})
}

var errThrottleLast = errors.New("the last endpoint has no next endpoint to send shed calls to")
