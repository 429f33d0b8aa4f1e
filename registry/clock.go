package registry

import "time"

// Clock is the registry's time source. It is the minimum the registry needs:
// open holds, probe leases and retry_after are all measured with it.
//
// The default is the system clock (monotonic in-process). Tests pass a
// registrytest.FakeClock, or run under testing/synctest where the system
// clock is virtual.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock returns the wall/monotonic clock of the process.
func SystemClock() Clock { return systemClock{} }
