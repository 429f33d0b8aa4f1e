package gctest_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/adkbreaker/adkbreaker/internal/gctest"
)

type handle struct {
	_ *int
	_ [64]byte
}

// TestCollectRunsCleanups: an object dropped before Collect has had its
// cleanup run when Collect returns; one kept alive has not.
func TestCollectRunsCleanups(t *testing.T) {
	var dropped, kept atomic.Bool
	func() {
		h := &handle{}
		runtime.AddCleanup(h, func(b *atomic.Bool) { b.Store(true) }, &dropped)
	}()
	alive := &handle{}
	runtime.AddCleanup(alive, func(b *atomic.Bool) { b.Store(true) }, &kept)
	gctest.Collect()
	if !dropped.Load() {
		t.Error("the dropped object's cleanup has not run")
	}
	if kept.Load() {
		t.Error("the live object's cleanup ran")
	}
	runtime.KeepAlive(alive)
}
