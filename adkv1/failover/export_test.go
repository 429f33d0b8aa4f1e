package failover

import "time"

// StallTimer is a test's stand-in for the stall deadlines' timer.
type StallTimer interface {
	Stop() bool
	Reset(time.Duration) bool
}

// SetStallTimers makes m start its stall deadlines with start instead of
// time.AfterFunc, so that a test decides when a deadline passes without
// waiting for it.
func SetStallTimers(m *Model, start func(d time.Duration, fire func()) StallTimer) {
	m.afterFunc = func(d time.Duration, f func()) stallTimer { return start(d, f) }
}

// SetTimeoutTimers makes m start its endpoints' Timeout timers with start
// instead of time.AfterFunc, so that a test decides when a Timeout passes
// without waiting for it.
func SetTimeoutTimers(m *Model, start func(d time.Duration, fire func()) StallTimer) {
	m.timeoutAfter = func(d time.Duration, f func()) stallTimer { return start(d, f) }
}
