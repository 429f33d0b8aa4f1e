package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultMaxBreakers is the default cap on breakers in one Registry.
const DefaultMaxBreakers = 1024

// MaxBreakersLimit is the largest cap WithMaxBreakers accepts. Sizes derived
// from the cap (the plugin's binding cache holds a few entries per breaker)
// stay far from integer overflow.
const MaxBreakersLimit = 1 << 20

// MaxNotifyQueue is the largest queue WithNotifyQueue accepts.
const MaxNotifyQueue = 1 << 20

// Registry maps dependency keys to breakers. It is the single owner of breaker
// state: share one Registry between the plugin, failover models and MCP
// toolsets so that a dependency has one breaker wherever it is called from.
//
// A Registry is safe for concurrent use. Breakers are created on first use of
// a key, up to a hard cap; there is no eviction, because keys come from
// configuration and an evictable breaker can be reset by flooding new keys.
type Registry struct {
	clock    Clock
	rand     func() float64
	def      Policy
	policies map[Key]Policy // resolved; immutable after New
	health   map[Key]HealthCheck
	max      int

	mu       sync.Mutex                       // serialises creation
	breakers atomic.Pointer[map[Key]*Breaker] // copy-on-write: lock-free reads
	// others counts breakers of keys without a policy of their own. They
	// may take only the slots that configured keys do not reserve, so that
	// flooding the registry with other keys cannot lock a configured
	// dependency out. Guarded by mu.
	others int

	n notifier

	gate gateSlot // see SetProbeGate (fleet.go)
	// adm holds the layers that admit calls ahead of the call (admission.go).
	adm admissions
	// source is WithSource's value (accessors.go).
	source any
}

// Option configures New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	clock    Clock
	rand     func() float64
	def      Policy
	policies map[Key]Policy
	max      int
	queue    int
	health   map[Key]HealthCheck
	source   any
	errs     []error
}

// WithClock sets the time source. The default is the system clock.
func WithClock(c Clock) Option {
	return optionFunc(func(cfg *config) {
		if c == nil {
			cfg.errs = append(cfg.errs, errors.New("clock: must not be nil"))
			return
		}
		cfg.clock = c
	})
}

// WithRand sets the random source used for hold jitter; f must return values
// in [0, 1) and be safe for concurrent use. The default is math/rand/v2.
func WithRand(f func() float64) Option {
	return optionFunc(func(cfg *config) {
		if f == nil {
			cfg.errs = append(cfg.errs, errors.New("rand: must not be nil"))
			return
		}
		cfg.rand = f
	})
}

// WithDefaultPolicy sets the policy of keys that have no policy of their own.
func WithDefaultPolicy(p Policy) Option {
	return optionFunc(func(cfg *config) { cfg.def = p })
}

// WithPolicy sets the policy of one dependency key.
func WithPolicy(k Key, p Policy) Option {
	return optionFunc(func(cfg *config) {
		if cfg.policies == nil {
			cfg.policies = map[Key]Policy{}
		}
		cfg.policies[k] = p
	})
}

// WithMaxBreakers caps how many breakers the registry holds. If n is 0,
// DefaultMaxBreakers.
func WithMaxBreakers(n int) Option {
	return optionFunc(func(cfg *config) { cfg.max = n })
}

// WithNotifyQueue sets how many transitions may wait for delivery to slow
// subscribers before new ones are dropped (and counted). If 0, 4096.
func WithNotifyQueue(n int) Option {
	return optionFunc(func(cfg *config) { cfg.queue = n })
}

// WithSource records what the registry's options were built from, for
// the layers that share the registry (Source): config.File.RegistryOptions
// passes its file, so that a plugin given the registry but not the file can
// say so instead of silently ignoring the file's tool mappings. The
// registry itself never reads it.
func WithSource(src any) Option {
	return optionFunc(func(cfg *config) { cfg.source = src })
}

// New returns a Registry. Invalid configuration returns one error listing
// every problem.
func New(opts ...Option) (*Registry, error) {
	cfg := config{clock: SystemClock(), rand: rand.Float64}
	for _, o := range opts {
		o.apply(&cfg)
	}
	errs := cfg.errs
	if err := cfg.def.Validate(); err != nil {
		errs = append(errs, prefixErrs("default policy", err))
	}
	keys := make([]Key, 0, len(cfg.policies))
	for k := range cfg.policies {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	resolved := make(map[Key]Policy, len(keys))
	for _, k := range keys {
		if !k.Valid() {
			errs = append(errs, fmt.Errorf("policy key %q: %w", k, ErrInvalidKey))
			continue
		}
		p := cfg.policies[k]
		if err := p.Validate(); err != nil {
			errs = append(errs, prefixErrs(fmt.Sprintf("policy %q", k), err))
			continue
		}
		resolved[k] = p.WithDefaults()
	}
	if cfg.max < 0 || cfg.max > MaxBreakersLimit {
		errs = append(errs, fmt.Errorf("max breakers: must be in [0, %d], got %d", MaxBreakersLimit, cfg.max))
	}
	if cfg.max == 0 {
		cfg.max = DefaultMaxBreakers
	}
	if cfg.max > 0 && len(resolved) > cfg.max {
		errs = append(errs, fmt.Errorf("max breakers: %d policies configured but the cap is %d", len(resolved), cfg.max))
	}
	if cfg.queue < 0 || cfg.queue > MaxNotifyQueue {
		errs = append(errs, fmt.Errorf("notify queue: must be in [0, %d], got %d", MaxNotifyQueue, cfg.queue))
	}
	if cfg.queue == 0 {
		cfg.queue = 4096
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := &Registry{
		clock: cfg.clock, rand: cfg.rand, def: cfg.def.WithDefaults(),
		policies: resolved, max: cfg.max, health: cfg.health, source: cfg.source,
	}
	r.n.limit = cfg.queue
	m := map[Key]*Breaker{}
	r.breakers.Store(&m)
	return r, nil
}

// MustNew is New that panics on error, for package-level variables and tests.
func MustNew(opts ...Option) *Registry {
	r, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return r
}

func prefixErrs(prefix string, err error) error {
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, fmt.Errorf("%s: %w", prefix, e))
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// Get returns the breaker for k, creating it on first use with k's policy (or
// the default policy). It returns ErrInvalidKey for an invalid key, and
// ErrCapacity for a new key once the cap is reached. Keys configured with
// WithPolicy have their slots reserved: only the rest of the cap is open to
// other keys.
func (r *Registry) Get(k Key) (*Breaker, error) {
	if b, ok := (*r.breakers.Load())[k]; ok {
		return b, nil
	}
	if !k.Valid() {
		return nil, fmt.Errorf("%w: %q", ErrInvalidKey, k)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := *r.breakers.Load()
	if b, ok := cur[k]; ok {
		return b, nil
	}
	pol, configured := r.policies[k]
	if !configured {
		if r.others >= r.max-len(r.policies) {
			return nil, fmt.Errorf("%w (%d, %d reserved for configured keys): cannot add %q", ErrCapacity, r.max, len(r.policies), k)
		}
		r.others++
		pol = r.def
	}
	b := newBreaker(r, k, pol)
	next := make(map[Key]*Breaker, len(cur)+1)
	for kk, v := range cur {
		next[kk] = v
	}
	next[k] = b
	r.breakers.Store(&next)
	return b, nil
}

// Lookup returns the breaker for k if it exists; it never creates one.
func (r *Registry) Lookup(k Key) (*Breaker, bool) {
	b, ok := (*r.breakers.Load())[k]
	return b, ok
}

// PolicyFor returns the resolved policy k has, or would have when created.
func (r *Registry) PolicyFor(k Key) Policy {
	if p, ok := r.policies[k]; ok {
		return p
	}
	return r.def
}

// Len returns how many breakers exist.
func (r *Registry) Len() int { return len(*r.breakers.Load()) }

// Cap returns the maximum number of breakers.
func (r *Registry) Cap() int { return r.max }

// Snapshot returns the status of every dependency, sorted by key.
func (r *Registry) Snapshot() []Status {
	m := *r.breakers.Load()
	out := make([]Status, 0, len(m))
	for _, b := range m {
		out = append(out, b.Status())
	}
	slices.SortFunc(out, func(a, b Status) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

// AnyUnavailable reports whether some breaker is not closed. It is a cheap
// check for hot paths that only need detail when something is wrong.
func (r *Registry) AnyUnavailable() bool {
	for _, b := range *r.breakers.Load() {
		if State(b.state.Load()) != StateClosed {
			return true
		}
	}
	return false
}

// Isolate forces k open until Reset (creating its breaker if needed).
func (r *Registry) Isolate(k Key) error {
	b, err := r.Get(k)
	if err != nil {
		return err
	}
	b.Isolate()
	return nil
}

// Reset returns k to closed. Resetting an unknown key is a no-op.
func (r *Registry) Reset(k Key) {
	if b, ok := r.Lookup(k); ok {
		b.Reset()
	}
}
