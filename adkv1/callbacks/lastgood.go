package callbacks

import (
	"encoding/json"
	"sync"
	"time"
)

// lastGoodCache keeps the most recent successful results of one tool, keyed
// by the caller's scope (app and user) and the canonical arguments, so a
// short-circuit can offer the model a stale answer labelled with its age —
// never another user's. Bounded; the oldest entry is dropped. Loads return a
// copy, so nothing downstream can change the cached result.
type lastGoodCache struct {
	mu  sync.Mutex
	max int
	m   map[string]lastGood // Guarded by mu.
}

type lastGood struct {
	result map[string]any
	at     time.Time
}

const maxLastGoodBytes = 512

func newLastGoodCache(n int) *lastGoodCache {
	if n <= 0 {
		n = 32
	}
	return &lastGoodCache{max: n, m: make(map[string]lastGood, n)}
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

func (c *lastGoodCache) store(scope string, args, result map[string]any, now time.Time) {
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
			if first || v.at.Before(oldT) {
				oldK, oldT, first = kk, v.at, false
			}
		}
		delete(c.m, oldK)
	}
	c.m[k] = lastGood{result: cloneJSON(result), at: now}
}

func (c *lastGoodCache) load(scope string, args map[string]any) (lastGood, bool) {
	k, ok := argsKey(scope, args)
	if !ok {
		return lastGood{}, false
	}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if !ok {
		return lastGood{}, false
	}
	v.result = cloneJSON(v.result)
	return v, v.result != nil
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
