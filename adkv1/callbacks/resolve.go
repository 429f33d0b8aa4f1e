package callbacks

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/tool"

	"github.com/adkbreaker/adkbreaker/adkv1/internal/adkctx"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/lastgood"
	"github.com/adkbreaker/adkbreaker/internal/repeatguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Mapping routes tools to a dependency: several tools on one backend share
// one breaker.
type Mapping struct {
	// Tools are tool names or path.Match patterns ("billing_*"). A pattern
	// never captures the tools ADK v2 installs to delegate to a task-mode or
	// single_turn sub-agent, nor finish_task: only their exact name maps
	// one.
	Tools []string `json:"tools" yaml:"tools"`
	// Dependency is the configured dependency key.
	Dependency registry.Key `json:"dependency" yaml:"dependency"`
}

// DependencyKeyer is implemented by tools that know their backend (the MCP
// layer's tools do). Its key is used when no Mapping matches.
type DependencyKeyer interface {
	DependencyKey() string
}

// Unmapped says what happens to a declared tool that no Mapping names and that
// reports no DependencyKey.
type Unmapped uint8

const (
	// ProtectByName gives the tool a breaker keyed by its own name (default).
	ProtectByName Unmapped = iota
	// PassThrough leaves the tool unprotected.
	PassThrough
)

// resolver maps tools to bindings. Bindings are cached copy-on-write by tool
// name and, for DependencyKeyer tools, their reported key.
type resolver struct {
	reg      *registry.Registry
	exact    map[string]registry.Key
	patterns []pattern
	unmapped Unmapped
	deps     map[registry.Key]Dependency
	limit    int
	maxCache int
	// repeatDefault and repeatTools resolve binding.repeat (repeat.go).
	repeatDefault int
	repeatTools   map[string]int

	mu sync.Mutex
	// byName caches tools without a DependencyKey (one string to hash on the
	// hot path); byKey caches DependencyKeyer tools by name and key.
	byName atomic.Pointer[map[string]*binding]
	cache  atomic.Pointer[map[bindKey]*binding]
	// few holds the first fewNames entries of byName in a slice: comparing
	// a handful of names (a tool returns the same string each time, so
	// equal names compare by pointer) is cheaper than hashing one.
	few atomic.Pointer[[]namedBinding]
	// frameworks caches the bindings of ADK's own tools (frameworkBinding)
	// by name, apart from byName: a tool of the user's with the same name
	// is bound as usual.
	frameworks sync.Map // string → *binding
	nFramework atomic.Int64
}

// fewNames bounds resolver.few.
const fewNames = 8

type namedBinding struct {
	name string
	bd   *binding
}

type pattern struct {
	glob string
	key  registry.Key
}

type bindKey struct {
	name, dep string
}

// binding is everything the hot path needs for one tool.
type binding struct {
	key      registry.Key
	tool     string
	br       *registry.Breaker // nil: unprotected
	builder  *degrade.Builder
	classify Classifier
	lastGood *lastgood.Cache
	// callTimeout is the breaker policy's CallTimeout (guarded tools).
	callTimeout time.Duration
	// repeat is the repeated-call guard's N for the tool (0: off), and
	// toolHash its name's hash there (repeat.go).
	repeat   int
	toolHash uint64
	// shadow is the breaker policy's Shadow: nothing the model reads may
	// change because of it (see Handler.annotate).
	shadow bool
}

func newResolver(reg *registry.Registry, maps []Mapping, deps map[registry.Key]Dependency, unmapped Unmapped, limit int) (*resolver, error) {
	r := &resolver{reg: reg, exact: map[string]registry.Key{}, unmapped: unmapped, deps: deps, limit: limit, maxCache: cacheCap(reg.Cap())}
	var errs []error
	for i, m := range maps {
		if err := degrade.CheckName(string(m.Dependency)); err != nil {
			errs = append(errs, fmt.Errorf("mappings[%d].dependency: %w", i, err))
		} else if !m.Dependency.Valid() {
			errs = append(errs, fmt.Errorf("mappings[%d].dependency: invalid key %q", i, m.Dependency))
		}
		if len(m.Tools) == 0 {
			errs = append(errs, fmt.Errorf("mappings[%d].tools: must name at least one tool", i))
		}
		for j, name := range m.Tools {
			if _, err := path.Match(name, ""); err != nil || name == "" {
				errs = append(errs, fmt.Errorf("mappings[%d].tools[%d]: invalid name or pattern %q", i, j, name))
				continue
			}
			if isPattern(name) {
				r.patterns = append(r.patterns, pattern{glob: name, key: m.Dependency})
				continue
			}
			if prev, dup := r.exact[name]; dup && prev != m.Dependency {
				errs = append(errs, fmt.Errorf("mappings[%d].tools[%d]: %q already mapped to %q", i, j, name, prev))
				continue
			}
			r.exact[name] = m.Dependency
		}
	}
	empty := map[bindKey]*binding{}
	r.cache.Store(&empty)
	emptyNames := map[string]*binding{}
	r.byName.Store(&emptyNames)
	return r, errors.Join(errs...)
}

// cacheCap bounds the binding caches: a few entries per breaker (a tool
// surface larger than the registry holds is cached up to this, the rest is
// bound uncached). It saturates instead of overflowing.
func cacheCap(breakers int) int {
	const perBreaker = 4
	if breakers <= 0 {
		return perBreaker * registry.DefaultMaxBreakers
	}
	if breakers > math.MaxInt/perBreaker {
		return math.MaxInt
	}
	return perBreaker * breakers
}

func isPattern(s string) bool {
	for _, c := range s {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// keyOf is the cache key of a tool: its name, and its DependencyKey if it
// reports one. A GuardedTool resolves as the tool it guards.
func keyOf(t tool.Tool) bindKey {
	t = Unwrap(t)
	if dk, ok := t.(DependencyKeyer); ok {
		return bindKey{name: t.Name(), dep: dk.DependencyKey()}
	}
	return bindKey{name: t.Name()}
}

// cached returns the cached binding for k. Tools without a DependencyKey are
// cached by name alone, so the common lookup hashes one string.
func (r *resolver) cached(k bindKey) (*binding, bool) {
	if k.dep == "" {
		if few := r.few.Load(); few != nil {
			for _, nb := range *few {
				if nb.name == k.name {
					return nb.bd, true
				}
			}
		}
		b, ok := (*r.byName.Load())[k.name]
		return b, ok
	}
	b, ok := (*r.cache.Load())[k]
	return b, ok
}

// bind returns the binding of a declared tool, creating its breaker on first
// use. Only BeforeTool calls it, and ADK calls BeforeTool only for tools
// declared to the agent, so names the model invents never create breakers.
func (r *resolver) bind(t tool.Tool) *binding {
	k := keyOf(t)
	if b, ok := r.cached(k); ok {
		return b
	}
	return r.bindSlow(k)
}

func (r *resolver) keyFor(k bindKey) (registry.Key, bool) {
	if key, ok := r.exact[k.name]; ok {
		return key, true
	}
	for _, p := range r.patterns {
		if ok, _ := path.Match(p.glob, k.name); ok {
			return p.key, true
		}
	}
	if k.dep != "" {
		return registry.Key(k.dep), true
	}
	if r.unmapped == PassThrough {
		return "", false
	}
	return registry.Key(k.name), true
}

func (r *resolver) bindSlow(k bindKey) *binding {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.cached(k); ok {
		return b
	}
	b := &binding{tool: k.name}
	depRepeat := 0
	if key, ok := r.keyFor(k); ok {
		b.key = key
		br, err := r.reg.Get(key)
		if err != nil {
			// Over the cap or an invalid key: leave the tool unprotected
			// rather than fail the agent; BeforeTool says so, naming the run.
			br = nil
		}
		b.br = br
		if br != nil {
			pol := br.Policy()
			b.callTimeout, b.shadow = pol.CallTimeout, pol.Shadow
		}
		dep := r.deps[key]
		depRepeat = dep.RepeatLimit
		b.classify = dep.Classify
		b.builder = degrade.NewBuilder(string(key), k.name, r.limit, degrade.Extras{Alternatives: dep.Alternatives})
		if dep.CacheLastGood {
			b.lastGood = lastgood.New(dep.LastGoodEntries)
		}
	}
	b.repeat = repeatLimitOf(r.repeatDefault, r.repeatTools, depRepeat, k.name)
	if b.repeat > 0 {
		b.toolHash = repeatguard.ToolHash(k.name)
	}
	if k.dep == "" {
		cowInsert(&r.byName, k.name, b, r.maxCache)
		if cur := r.few.Load(); cur == nil || len(*cur) < fewNames {
			var next []namedBinding
			if cur != nil {
				next = append(next, *cur...)
			}
			next = append(next, namedBinding{name: k.name, bd: b})
			r.few.Store(&next)
		}
	} else {
		cowInsert(&r.cache, k, b, r.maxCache)
	}
	return b
}

// cowInsert adds k → b to a copy-on-write map unless it already holds max
// entries (then b is used uncached: bounded memory even for a huge tool
// surface). Callers hold r.mu.
func cowInsert[K comparable](m *atomic.Pointer[map[K]*binding], k K, b *binding, max int) {
	cur := *m.Load()
	if len(cur) >= max {
		return
	}
	next := make(map[K]*binding, len(cur)+1)
	for kk, v := range cur {
		next[kk] = v
	}
	next[k] = b
	m.Store(&next)
}

// lookupTool returns a tool's binding without creating a breaker.
func (r *resolver) lookupTool(t tool.Tool) *binding {
	k := keyOf(t)
	if b, ok := r.cached(k); ok {
		return b
	}
	key, ok := r.keyFor(k)
	if !ok {
		return nil
	}
	br, ok := r.reg.Lookup(key)
	if !ok {
		return nil
	}
	pol := br.Policy()
	return &binding{key: key, tool: k.name, br: br, callTimeout: pol.CallTimeout, shadow: pol.Shadow}
}

// keyOfTool returns the dependency t's calls are counted under, without
// creating anything; false for a tool passed through unprotected.
func (r *resolver) keyOfTool(t tool.Tool) (registry.Key, bool) {
	if r.framework(t) {
		return "", false
	}
	k := keyOf(t)
	if b, ok := r.cached(k); ok {
		return b.key, b.br != nil
	}
	return r.keyFor(k)
}

// protection reports whether calls of t go through a breaker (or will,
// once its breaker is created; it creates nothing), with t's binding when it
// is cached already (nil otherwise), and whether that breaker's policy is
// in shadow mode.
func (r *resolver) protection(t tool.Tool) (bd *binding, protected, shadow bool) {
	if r.framework(t) {
		return nil, false, false
	}
	k := keyOf(t)
	if b, ok := r.cached(k); ok {
		if b.br == nil {
			return nil, false, false
		}
		return b, true, b.shadow
	}
	key, ok := r.keyFor(k)
	if !ok {
		return nil, false, false
	}
	return nil, true, r.reg.PolicyFor(key).Shadow // a breaker's policy is the one it was created with
}

// framework reports whether t is one of ADK's own tools that delegate to a
// sub-agent or end a task (adkctx.FrameworkTool: ADK v2's task and
// single_turn agent tools, finish_task) and no mapping names it exactly (a
// pattern such as "*" or "*_task" never captures one: a catch-all mapping
// must not turn a sub-agent back into a dependency). Such a tool
// is no dependency of its own, as an agent tool is not (see mapped): the
// sub-agent runs in the caller's invocation, under the same plugin, and its
// tools and model calls meet their breakers there; a breaker around the
// whole sub-agent would trip on its slowness (CallTimeout), charge its
// dependencies' failures to it, and hide their breakers; and finish_task
// only ends a task. ADK v1 has none (false, inlined away).
func (r *resolver) framework(t tool.Tool) bool {
	if !adkctx.FrameworkTool(t) {
		return false
	}
	_, named := r.exact[t.Name()]
	return !named
}

// frameworkBinding is the binding of one of ADK's own tools (framework): no
// breaker; the repeated-call guard counts its calls by name (a caller
// delegating the same request again is still a loop), following the
// policy the name would have for shadow mode, as an agent tool's do.
func (r *resolver) frameworkBinding(name string) *binding {
	if v, ok := r.frameworks.Load(name); ok {
		return v.(*binding)
	}
	b := &binding{tool: name, shadow: r.reg.PolicyFor(registry.Key(name)).Shadow}
	b.repeat = repeatLimitOf(r.repeatDefault, r.repeatTools, 0, name)
	if b.repeat > 0 {
		b.toolHash = repeatguard.ToolHash(name)
	}
	if r.nFramework.Load() < int64(r.maxCache) {
		if v, loaded := r.frameworks.LoadOrStore(name, b); loaded {
			return v.(*binding)
		}
		r.nFramework.Add(1)
	}
	return b
}
