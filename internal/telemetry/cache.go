package telemetry

import (
	"sync"
	"sync/atomic"
)

// cache is a bounded, copy-on-write map: lookups are one atomic load and a
// map read (no lock, no allocation); inserts copy the map under a mutex.
// Keys are few and stable (configuration-bound), so copies are rare.
type cache[K comparable, V any] struct {
	mu  sync.Mutex
	m   atomic.Pointer[map[K]V]
	max int
}

func newCache[K comparable, V any](max int) *cache[K, V] {
	c := &cache[K, V]{max: max}
	m := map[K]V{}
	c.m.Store(&m)
	return c
}

// get returns the value for k, building it with mk on first use. When the
// cache is full, it returns ok=false and builds nothing: the caller falls
// back to an overflow value.
func (c *cache[K, V]) get(k K, mk func(K) V) (v V, ok bool) {
	if v, ok := (*c.m.Load())[k]; ok {
		return v, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.m.Load()
	if v, ok := cur[k]; ok {
		return v, true
	}
	if len(cur) >= c.max {
		return v, false
	}
	v = mk(k)
	next := make(map[K]V, len(cur)+1)
	for kk, vv := range cur {
		next[kk] = vv
	}
	next[k] = v
	c.m.Store(&next)
	return v, true
}
