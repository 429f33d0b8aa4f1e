// Package gctest lets a test force what a garbage collection may do at any
// moment: collect every unreachable object and run the cleanups that
// releases (runtime.AddCleanup). runtime.GC alone does not wait for those
// cleanups, which run later on their own goroutines, so a test that forgot
// to keep an object alive passes most of the time; after Collect it fails
// every time.
package gctest

import "runtime"

// sentinel is large enough, and holds a pointer, so that it is never
// batched by the tiny allocator (whose objects' cleanups may never run).
type sentinel struct {
	_ *int
	_ [32]byte
}

// Collect runs a garbage collection and waits until the cleanups it queued
// have run. The runtime offers no way to wait for its cleanup queue, so
// Collect waits, twice, for the cleanup of a sentinel that was unreachable
// before the collection: cleanups queued by the same collection run
// alongside it. It must not be called inside a testing/synctest bubble
// (its channel would belong to the bubble and be closed from outside).
func Collect() {
	for range 2 {
		ran := make(chan struct{})
		runtime.AddCleanup(&sentinel{}, func(ch chan struct{}) { close(ch) }, ran)
		runtime.GC()
		<-ran
	}
}
