package failover

import (
	"errors"
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/shed"
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
// is only a cap, computed over sent calls and over buckets in which nothing
// was shed: counting shed calls as requests that can never be accepts made
// it run to its cap under a storm that refuses a share of the calls
// whatever the load. Below the cap the throttle sheds only once it has seen
// that shedding costs the endpoint no accepted calls, by a trial: once the
// cap over the latest bucket reaches 0.1, it sheds that share in every
// other bucket (of the window's ten) and compares the share of offered
// calls the endpoint accepted in the buckets that shed with that of the
// others, until the difference a load-independent storm would show is 2.5
// standard errors (a few buckets at 30 calls a second), at most a window.
// Equal shares (a capacity limit: what is shed would have been refused),
// and it sheds the cap's share in every bucket but every fifth, comparing
// the same way all along; lower by the shed share (a storm that does not
// depend on the load, left to per-call failover), and it stops, waiting two
// windows before the next trial, twice as long after each further finding
// while the storm lasts. A bucket in which every sent call was accepted ends
// the shedding. It needs about 20 calls a second with the default Window
// before it sheds anything; lengthen Window for less traffic.
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
	// buckets (nothing is shed in every other one during a trial, in every
	// fifth while shedding). If 0, DefaultThrottleWindow.
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

// newThrottle is t's throttle, with the defaults of its zero fields.
func newThrottle(t Throttle, random func() float64) *shed.Throttle {
	k, maxP, w := t.K, t.MaxRejectProbability, t.Window
	if k == 0 {
		k = DefaultThrottleK
	}
	if maxP == 0 {
		maxP = DefaultThrottleMaxRejectProbability
	}
	if w == 0 {
		w = DefaultThrottleWindow
	}
	return shed.NewThrottle(k, maxP, w, random)
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
