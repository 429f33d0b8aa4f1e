// Package lastgood keeps the last good results of a tool for the
// unavailable payload's stale answer (degrade.LastGood), per caller scope.
// It names no ADK type; the callbacks of each ADK line fill and read it.
package lastgood

import (
	"encoding/json"
	"sync"
	"time"
)

// Cache keeps the most recent successful results of one tool, keyed
// by the caller's scope (app and user) and the canonical arguments, so a
// short-circuit can offer the model a stale answer labelled with its age —
// never another user's. Bounded; the oldest entry is dropped. Loads return a
// copy, so nothing downstream can change the cached result.
type Cache struct {
	mu  sync.Mutex
	max int
	m   map[string]Entry // Guarded by mu.
}

// Entry is one cached result and when it was stored.
type Entry struct {
	Result map[string]any
	At     time.Time
}

const maxLastGoodBytes = 512

// New returns a cache of at most n results (32 when n ≤ 0).
func New(n int) *Cache {
	if n <= 0 {
		n = 32
	}
	return &Cache{max: n, m: make(map[string]Entry, n)}
}

// argsKey renders the scope and args canonically (encoding/json sorts map
// keys).
func argsKey(scope string, args map[string]any) (string, bool) {
	b, err := json.Marshal(args)
	if err != nil || len(b) > 4096 {
		return "", false
	}
	return scope + "\x00" + string(b), true
}

// Store keeps result as the last good answer to args in scope.
func (c *Cache) Store(scope string, args, result map[string]any, now time.Time) {
	if result == nil {
		return
	}
	if b, err := json.Marshal(result); err != nil || len(b) > maxLastGoodBytes {
		return // too large to offer inside a bounded payload
	}
	k, ok := argsKey(scope, args)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, exists := c.m[k]; !exists && len(c.m) >= c.max {
		var oldK string
		var oldT time.Time
		first := true
		for kk, v := range c.m {
			if first || v.At.Before(oldT) {
				oldK, oldT, first = kk, v.At, false
			}
		}
		delete(c.m, oldK)
	}
	c.m[k] = Entry{Result: cloneJSON(result), At: now}
}

// Load returns a copy of the last good answer to args in scope.
func (c *Cache) Load(scope string, args map[string]any) (Entry, bool) {
	k, ok := argsKey(scope, args)
	if !ok {
		return Entry{}, false
	}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if !ok {
		return Entry{}, false
	}
	v.Result = cloneJSON(v.Result)
	return v, v.Result != nil
}

// cloneJSON deep-copies a JSON-shaped value so later mutation by other
// callbacks cannot change the cached copy.
func cloneJSON(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
