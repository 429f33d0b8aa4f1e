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

// boxedSecondsTable holds float64(i) boxed in an interface at index i, for i
// in [1, MaxRetryAfterSeconds]. It is built on first use (about 56 KiB) so
// that programs which never build a payload pay nothing, and so that Build
// can store retry.after_seconds without allocating.
var boxedSecondsTable = sync.OnceValue(func() *[MaxRetryAfterSeconds + 1]any {
	var t [MaxRetryAfterSeconds + 1]any
	for i := 1; i <= MaxRetryAfterSeconds; i++ {
		t[i] = float64(i)
	}
	return &t
})

// boxedSeconds returns the shared boxed float64 for secs, which must already
// be in [1, MaxRetryAfterSeconds].
func boxedSeconds(secs int) any {
	return boxedSecondsTable()[secs]
}
