package degrade

import (
	"math"
	"sync"
	"time"
)

// UntilReset is the retry delay of a dependency an operator isolated: it
// stays unavailable until the operator resets it, so there is no retry time
// to give. It equals registry.UntilReset, which breakers report for an
// isolated dependency. Payloads then carry no retry.after_seconds, and
// messages say that nobody knows when it will be back instead of naming a
// time.
const UntilReset = time.Duration(math.MaxInt64)

// noRetry is the boxed Retry of an isolated dependency: not advised, no time.
var noRetry any = Retry{}

// RetryAfterSeconds converts a retry delay to the whole number of seconds a
// payload reports: d rounded up to the next second and clamped to
// [1, MaxRetryAfterSeconds]. Zero and negative delays become 1, so a payload
// never tells the model that retrying immediately is fine.
func RetryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		return 1
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int(min(s, MaxRetryAfterSeconds)) // d > 0 rounded up is ≥ 1
}

// boxedRetries holds Retry{Advised: false, AfterSeconds: i} boxed in an
// interface at index i, for i in [1, MaxRetryAfterSeconds]. It is built on
// first use (about 56 KiB) so that programs which never build a payload pay
// nothing, and so that Build can store a retry value without allocating.
var boxedRetries = sync.OnceValue(func() *[MaxRetryAfterSeconds + 1]any {
	var t [MaxRetryAfterSeconds + 1]any
	for i := 1; i <= MaxRetryAfterSeconds; i++ {
		t[i] = Retry{Advised: false, AfterSeconds: i}
	}
	return &t
})

// boxedRetry returns the shared boxed Retry for secs, which must already be
// in [1, MaxRetryAfterSeconds].
func boxedRetry(secs int) any {
	return boxedRetries()[secs]
}
