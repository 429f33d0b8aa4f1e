package mcpguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// DefaultName is the name of a Guard's toolset.
const DefaultName = "mcpguard"

// Guard guards a set of MCP servers and offers their tools to an ADK agent
// as one tool.Toolset (Toolset). It is safe for concurrent use; share one
// Guard between the runs of an agent, and Close it at shutdown.
type Guard struct {
	reg       *registry.Registry
	clock     registry.Clock // the registry's: ages state (tool lists, retry budget, notes)
	servers   []*server
	log       *slog.Logger
	rand      func() float64
	name      string
	invs      *invocations
	onBackoff func(server string, retry int, d time.Duration)
	idemKey   func(ctx agent.ToolContext, t *Tool, args any) string

	collisions sync.Map // declared name → struct{}: logged once
	closeOnce  sync.Once
}

// Option configures New. Options apply in order; later ones win.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	log       *slog.Logger
	rand      func() float64
	name      string
	maxInv    int
	onBackoff func(string, int, time.Duration)
	idemKey   func(agent.ToolContext, *Tool, any) string
	tel       telOptions // trace.go
	errs      []error
}

// WithLogger sets the logger. It receives one structured line per failed
// operation (server, operation, boundary, limit, class, reason) and nothing
// for operations that succeed. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l == nil {
			o.errs = append(o.errs, errors.New("logger: must not be nil"))
		}
		o.log = l
	})
}

// WithRand sets the random source of backoff jitter: f returns values in
// [0, 1) and must be safe for concurrent use. Default math/rand/v2.Float64.
func WithRand(f func() float64) Option {
	return optionFunc(func(o *options) {
		if f == nil {
			o.errs = append(o.errs, errors.New("rand: must not be nil"))
		}
		o.rand = f
	})
}

// WithName sets the toolset's name. Default "mcpguard".
func WithName(name string) Option {
	return optionFunc(func(o *options) { o.name = name })
}

// WithMaxInvocations caps how many invocations' degraded-capability notes
// are remembered at once (the oldest is forgotten first). Default 4096.
func WithMaxInvocations(n int) Option {
	return optionFunc(func(o *options) { o.maxInv = n })
}

// WithBackoffObserver calls f with every backoff delay the guard decides,
// before it waits (retry counts from 0). For tests and metrics; f must be
// fast.
func WithBackoffObserver(f func(server string, retry int, d time.Duration)) Option {
	return optionFunc(func(o *options) { o.onBackoff = f })
}

// WithIdempotencyKeys attaches an idempotency key to tool calls: f is asked
// once per call and a key it returns is sent in the call's _meta as
// "idempotency-key" (MetaIdempotencyKey), identical on every attempt. A call
// carrying a key may be retried after a fault like a tool the operator
// listed in Server.IdempotentTools: the server is trusted to run a key once.
// Return "" for calls (or servers) that do not honour keys; they keep the
// at-most-once rule. Keys must be printable ASCII of at most 255 bytes;
// others are not attached. NewIdempotencyKey makes random ones.
func WithIdempotencyKeys(f func(ctx agent.ToolContext, t *Tool, args any) string) Option {
	return optionFunc(func(o *options) { o.idemKey = f })
}

// New returns a Guard for servers, whose breakers live in reg (share it with
// the adkbreaker plugin so that a server's calls and discovery are one
// dependency). Invalid configuration returns one error listing every
// problem. New does not connect; Start or the first Tools call does.
func New(reg *registry.Registry, servers []Server, opts ...Option) (*Guard, error) {
	o := options{log: slog.Default(), rand: rand.Float64, name: DefaultName, maxInv: 4096}
	for _, op := range opts {
		if op == nil {
			o.errs = append(o.errs, errors.New("nil option"))
			continue
		}
		op.apply(&o)
	}
	errs := o.errs
	if reg == nil {
		errs = append(errs, errors.New("registry: required"))
	}
	if o.name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if o.maxInv < 0 {
		errs = append(errs, fmt.Errorf("max invocations: must be ≥ 0, got %d", o.maxInv))
	}
	if len(servers) == 0 {
		errs = append(errs, errors.New("servers: at least one is required"))
	}
	g := &Guard{reg: reg, log: o.log, rand: o.rand, name: o.name, onBackoff: o.onBackoff, idemKey: o.idemKey}
	if reg != nil {
		g.clock = reg.Clock()
	}
	seen := map[string]int{}
	for i, sc := range servers {
		prefix := fmt.Sprintf("servers[%d] (%s)", i, sc.Name)
		if err := sc.Validate(); err != nil {
			errs = append(errs, prefixErrs(prefix, err))
			continue
		}
		if j, dup := seen[sc.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name already used by servers[%d]", prefix, j))
			continue
		}
		seen[sc.Name] = i
		if reg == nil {
			continue
		}
		cfg := sc.WithDefaults()
		key := registry.Key(cfg.Name)
		pol := reg.PolicyFor(key)
		if sc.Breaker != nil && pol != sc.Breaker.WithDefaults() {
			errs = append(errs, fmt.Errorf("%s: breaker: the registry does not hold this policy for %q; create it with registry.New(mcpguard.RegistryOptions(servers...)...)", prefix, key))
		}
		for _, e := range breakerErrs(cfg, pol) { // layers.go
			errs = append(errs, fmt.Errorf("%s: %w", prefix, e))
		}
		br, err := reg.Get(key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", prefix, err))
			continue
		}
		g.servers = append(g.servers, newServer(g, cfg, br))
	}
	if err := g.initTelemetry(o.tel); err != nil { // trace.go
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("mcpguard: %w", err)
	}
	g.invs = newInvocations(cmp.Or(o.maxInv, 4096), g.clock)
	return g, nil
}

// MustNew is New that panics on error, for samples and tests.
func MustNew(reg *registry.Registry, servers []Server, opts ...Option) *Guard {
	g, err := New(reg, servers, opts...)
	if err != nil {
		panic(err)
	}
	return g
}

func prefixErrs(prefix string, err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, fmt.Errorf("%s: %w", prefix, e))
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// Start connects to every server and reads its tool list now, concurrently,
// each within its own budget. It returns the failures of required servers
// (joined; errors.As finds the *Error), so that an agent is not assembled
// without them; optional servers that fail are only logged and retried on
// later turns.
func (g *Guard) Start(ctx context.Context) error {
	errs := make([]error, len(g.servers))
	var wg sync.WaitGroup
	for i, s := range g.servers {
		wg.Go(func() {
			if _, err := s.tools(ctx); err != nil && s.cfg.Required {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return joinErrs(errs)
}

func joinErrs(errs []error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return errors.Join(out...)
}

// Toolset returns the guard's servers as one ADK toolset. Its Tools runs a
// discovery (or serves the cached list) for every server: a required server
// that cannot be reached fails it with an *Error; an optional one is left
// out, and the toolset's ProcessRequest tells the model, once per request,
// which capability is missing (degrade.CapabilityNotice, appended to the
// system instruction), or which is down although its last good list is
// offered (degrade.DegradedCapabilityNotice).
func (g *Guard) Toolset() tool.Toolset { return (*toolset)(g) }

// Health returns every server's health, in configuration order.
func (g *Guard) Health() []ServerHealth {
	out := make([]ServerHealth, len(g.servers))
	for i, s := range g.servers {
		out[i] = s.health()
	}
	return out
}

// DegradedServer is an optional server whose last discovery failed (see
// Guard.Degraded).
type DegradedServer struct {
	// Server is the configured name, Capability what the model is told is
	// missing.
	Server     string
	Capability string
	// LastGood reports whether the server's last good tool list is still
	// offered (its calls may fail); false: its tools are left out.
	LastGood bool
	// Err is the failure of the last discovery: an *Error, or an
	// *UnavailableError while the server's breaker is open.
	Err error
}

// Degraded lists the optional servers whose last discovery failed, in
// configuration order: after Start, the servers the agent starts without
// (or with only their last good tool list). A server leaves the list at the
// first discovery that succeeds (a later turn's Tools). Required servers are
// never listed: their failures fail Start and the turn instead. Empty when
// every optional server is healthy or has not been asked yet.
func (g *Guard) Degraded() []DegradedServer {
	var out []DegradedServer
	for _, s := range g.servers {
		if s.cfg.Required {
			continue
		}
		s.mu.Lock()
		err, lastGood := s.discErr, s.cache != nil && !s.cfg.NoLastGood
		s.mu.Unlock()
		if err == nil {
			if e := s.breakerDown(); e != nil {
				err = e // the list is fresh, the server's breaker open
			}
		}
		if err != nil && serverDown(err) { // not a caller that ran out of time
			out = append(out, DegradedServer{Server: s.cfg.Name, Capability: s.cfg.Capability, LastGood: lastGood, Err: err})
		}
	}
	return out
}

// Close closes every session the guard opened (a caller's Session is left
// open) and fails later operations. It is idempotent.
func (g *Guard) Close() error {
	g.closeOnce.Do(func() {
		for _, s := range g.servers {
			s.conn.close()
		}
	})
	return nil
}

// toolset is the Guard seen as an ADK tool.Toolset (and request processor).
type toolset Guard

func (ts *toolset) Name() string { return ts.name }

// Tools implements tool.Toolset.
func (ts *toolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	return (*Guard)(ts).tools(ctx)
}

// ProcessRequest implements ADK's request processor for toolsets: it adds
// the note on capabilities missing in this invocation.
func (ts *toolset) ProcessRequest(ctx agent.ToolContext, req *model.LLMRequest) error {
	g := (*Guard)(ts)
	missing, degraded := g.invs.missing(invKey(ctx.InvocationID(), ctx.AgentName()))
	if req == nil {
		return nil
	}
	if note := degrade.CapabilityNotice(missing); note != "" {
		appendInstruction(req, note)
	}
	if note := degrade.DegradedCapabilityNotice(degraded); note != "" {
		appendInstruction(req, note)
	}
	return nil
}

type serverTools struct {
	tools []*Tool
	err   error
}

func (g *Guard) tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	key := invKey(ctx.InvocationID(), ctx.AgentName())
	failed := g.invs.failures(key)
	res := make([]serverTools, len(g.servers))
	var wg sync.WaitGroup
	for i, s := range g.servers {
		if err, ok := failed[s.cfg.Name]; ok {
			// Already failed in this invocation (ADK asks again on every step
			// when no tool resolved): do not pay for it twice.
			res[i].err = err
			continue
		}
		wg.Go(func() {
			r := &res[i]
			r.tools, r.err = s.tools(ctx)
		})
	}
	wg.Wait()

	var (
		out      []tool.Tool
		missing  []string
		degraded []string // down, but offered from the last good list
		required []error
		fails    map[string]error
		names    = make(map[string]string)
	)
	for i, r := range res {
		s := g.servers[i]
		if len(r.tools) == 0 && r.err != nil {
			if fails == nil {
				fails = map[string]error{}
			}
			fails[s.cfg.Name] = r.err
			if s.cfg.Required {
				required = append(required, r.err)
			} else {
				missing = append(missing, s.cfg.Capability)
			}
			continue
		}
		if r.err != nil && serverDown(r.err) {
			degraded = append(degraded, s.cfg.Capability)
		}
		for _, t := range r.tools {
			if owner, dup := names[t.name]; dup {
				if _, logged := g.collisions.LoadOrStore(t.name, struct{}{}); !logged {
					g.log.Warn("mcpguard: tool name collision; later server's tool left out (set ToolPrefix)",
						"tool", t.name, "kept_server", owner, "dropped_server", s.cfg.Name)
				}
				continue
			}
			names[t.name] = s.cfg.Name
			out = append(out, t)
		}
	}
	g.invs.set(key, missing, degraded, fails)
	if err := joinErrs(required); err != nil {
		return nil, err
	}
	return out, nil
}

func invKey(inv, agentName string) string { return inv + "\x00" + agentName }

// serverDown reports whether a failed discovery says the server is down (or
// its breaker open), rather than that the caller ran out of time.
func serverDown(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return !e.callerBound()
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// appendInstruction appends text to the request's system instruction, as
// ADK's own toolsets do, unless it is already there.
func appendInstruction(req *model.LLMRequest, text string) {
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	si := req.Config.SystemInstruction
	if si == nil {
		req.Config.SystemInstruction = genai.NewContentFromText(text, genai.RoleUser)
		return
	}
	for _, p := range si.Parts {
		if p != nil && strings.Contains(p.Text, text) {
			return
		}
	}
	if n := len(si.Parts); n > 0 && si.Parts[n-1] != nil && si.Parts[n-1].Text != "" {
		si.Parts[n-1].Text += "\n\n" + text
		return
	}
	si.Parts = append(si.Parts, genai.NewPartFromText(text))
}

// invocations remembers, per invocation and agent, which capabilities are
// missing and which servers already failed, so that ProcessRequest can tell
// the model and a repeated Tools call does not dial again. Bounded: the
// oldest entry is forgotten first. ADK gives toolsets no end-of-run hook, so
// entries also expire after invMaxAge.
type invocations struct {
	mu    sync.Mutex
	max   int
	clock registry.Clock
	m     map[string]*invState // Guarded by mu.
	seq   uint64               // Guarded by mu.
}

type invState struct {
	missing  []string
	degraded []string
	failed   map[string]error
	at       time.Time
	seq      uint64
}

const invMaxAge = time.Hour

func newInvocations(max int, clock registry.Clock) *invocations {
	return &invocations{max: max, clock: clock, m: make(map[string]*invState)}
}

func (iv *invocations) set(key string, missing, degraded []string, failed map[string]error) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	st, ok := iv.m[key]
	if !ok {
		if len(missing) == 0 && len(degraded) == 0 && len(failed) == 0 {
			return // nothing to remember: allocate nothing on the healthy path
		}
		iv.evictLocked()
		st = &invState{}
		iv.m[key] = st
	}
	iv.seq++
	st.missing, st.degraded, st.at, st.seq = missing, degraded, iv.clock.Now(), iv.seq
	if st.failed == nil {
		st.failed = failed
	} else {
		for k, v := range failed {
			st.failed[k] = v
		}
	}
}

func (iv *invocations) evictLocked() {
	if len(iv.m) < iv.max {
		return
	}
	now := iv.clock.Now()
	var oldK string
	var oldSeq uint64
	first := true
	for k, st := range iv.m {
		if now.Sub(st.at) > invMaxAge {
			delete(iv.m, k)
			continue
		}
		if first || st.seq < oldSeq {
			oldK, oldSeq, first = k, st.seq, false
		}
	}
	if len(iv.m) >= iv.max && !first {
		delete(iv.m, oldK)
	}
}

// missing returns the capabilities left out of the invocation's tools, and
// those offered from a last good list while their server is down.
func (iv *invocations) missing(key string) (missing, degraded []string) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if st, ok := iv.m[key]; ok && iv.clock.Now().Sub(st.at) <= invMaxAge {
		return st.missing, st.degraded
	}
	return nil, nil
}

func (iv *invocations) failures(key string) map[string]error {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if st, ok := iv.m[key]; ok && iv.clock.Now().Sub(st.at) <= invMaxAge && len(st.failed) > 0 {
		out := make(map[string]error, len(st.failed))
		for k, v := range st.failed {
			out[k] = v
		}
		return out
	}
	return nil
}
