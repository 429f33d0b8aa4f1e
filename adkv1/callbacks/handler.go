package callbacks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/internal/adkctx"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/internal/repeatguard"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Dependency holds per-dependency options of the callbacks.
type Dependency struct {
	// Alternatives are tool names the model may use instead; they are listed
	// in the unavailable payload. One that is not among the tools of a model
	// request declaring a tool of the dependency is logged once (WARN) and
	// still offered: see altCheck.
	Alternatives []string `json:"alternatives,omitempty" yaml:"alternatives,omitempty"`
	// CacheLastGood keeps recent successful results (per tool and arguments)
	// and offers the matching one, with its age, in the unavailable payload.
	CacheLastGood bool `json:"cache_last_good,omitempty" yaml:"cache_last_good,omitempty"`
	// LastGoodEntries bounds the cache per tool. If 0, 32.
	LastGoodEntries int `json:"last_good_entries,omitempty" yaml:"last_good_entries,omitempty"`
	// Classify overrides failure classification for this dependency; it
	// falls back to the default Classify when it returns ok=false.
	Classify Classifier `json:"-" yaml:"-"`
	// RepeatLimit is the repeated-call guard's N for this dependency's tools
	// (see Config.RepeatLimit): 0 inherits the handler's, NoRepeatLimit
	// turns the guard off for them (a polling tool).
	RepeatLimit int `json:"repeat_limit,omitempty" yaml:"repeat_limit,omitempty"`
}

// ModelGuard reports whether every endpoint behind a model is unavailable.
// A failover model implements it; BeforeModel then ends the turn with a
// readable message instead of failing it.
type ModelGuard interface {
	// ModelUnavailable reports, for the model whose Name() is name, whether
	// no endpoint can be tried now, and when the first one can.
	ModelUnavailable(name string) (unavailable bool, retryAfter time.Duration)
}

// ErrTurnEnded is returned by BeforeModel for a model call made after the
// plugin already ended the invocation's turn (a budget spent, or no model
// endpoint available) by an agent that already read the plugin's final
// answer in that branch as many times as it may (16). An agent that has
// not read it yet — a sibling branch of a ParallelAgent, the next agent of
// a SequentialAgent, the next node of a graph workflow — is answered with
// the same final answer instead, and one that runs again — a node of an
// ADK v2 graph workflow whose edges loop back to it: the graph's routing,
// not the plugin, ends the loop — reads it again, so that the run ends on
// the plugin's answer rather than failing. Plain agents never make such
// calls; a LoopAgent stops on the plugin's escalating answer (OnEvent).
// Without this error a loop that never leaves would spin forever on the
// plugin's final answers.
var ErrTurnEnded = errors.New("adkbreaker: the turn already ended (a budget was spent, or the model is unavailable)")

// Defaults of Config.
const (
	DefaultShortCircuitLimit = degrade.DefaultLimit
	DefaultTurnLimit         = 5
	DefaultMaxPending        = 1 << 16
)

// Upper bounds of Config's sizes: larger values are refused by New, so that
// nothing derived from them (table capacities, shard sizes) can overflow or
// preallocate without bound.
const (
	// MaxTableSize bounds MaxPending and MaxInvocations.
	MaxTableSize = 1 << 24
	// MaxLastGoodEntries bounds Dependency.LastGoodEntries.
	MaxLastGoodEntries = 1 << 16
)

// Config configures a Handler. Registry is required; every other zero field
// means its default.
type Config struct {
	// Registry holds the breakers. Required.
	Registry *registry.Registry
	// Mappings route tools to dependencies.
	Mappings []Mapping
	// Dependencies holds per-dependency options, by key.
	Dependencies map[registry.Key]Dependency
	// Unmapped says what to do with tools no mapping names. Default
	// ProtectByName.
	Unmapped Unmapped
	// ShortCircuitLimit is K: from the K-th short-circuit of one dependency in
	// an invocation, guidance becomes terminal. If 0, 2.
	ShortCircuitLimit int
	// TurnLimit is H: after H short-circuits across all dependencies in an
	// invocation, BeforeModel ends the turn with a final answer. If 0, 5.
	TurnLimit int
	// MaxModelCalls is the turn budget in model calls: BeforeModel answers
	// the call after the MaxModelCalls-th of an invocation itself, with a
	// final answer, and the model is not called again in that invocation.
	// If 0, no limit.
	MaxModelCalls int
	// MaxTurnTokens is the turn budget in tokens: once the usage metadata
	// of the invocation's model responses (sub-agents reached through agent
	// tools included) adds up to MaxTurnTokens or more, BeforeModel answers
	// the next model call itself with a final answer (TurnEndTokenBudget),
	// so a turn spends at most one model call's tokens past the budget.
	// If 0, no limit.
	MaxTurnTokens int64
	// MaxTurnDuration is the turn budget in time, measured with the
	// registry's clock from the start of the run (BeforeRun; from the first
	// model call when the handler is used without BeforeRun): the first model
	// call at or after it is answered by BeforeModel with a final answer. A
	// guarded tool call runs with the turn's deadline in its context: one
	// still running when the time is up is cancelled, excluded (never
	// charged to its dependency) and answered with degrade.TurnDeadlineNote,
	// and the turn ends. Unguarded calls are not interrupted. If 0, no limit.
	MaxTurnDuration time.Duration
	// RemoveUnavailable removes the declarations of tools whose dependency is
	// open from the model request, instead of marking them unavailable.
	// Neither happens to a tool whose breaker is in shadow mode
	// (registry.Policy.Shadow): shadow mode changes nothing the model reads,
	// and a ShadowObserver is told what would have been done instead.
	RemoveUnavailable bool
	// MaxInvocations caps invocations with short-circuit accounting. If 0, 10000.
	MaxInvocations int
	// InvocationMaxAge is the sweeper backstop for invocations whose AfterRun
	// never fires. If 0, 1h.
	InvocationMaxAge time.Duration
	// MaxPending caps admitted tool calls awaiting an outcome. If 0, 65536.
	MaxPending int
	// ModelGuards are consulted by BeforeModel (failover models).
	ModelGuards []ModelGuard
	// Observer receives short-circuits, escalations and ended turns. If nil,
	// none.
	Observer Observer
	// Logger receives warnings (capacity overflow). If nil, slog.Default().
	Logger *slog.Logger
	// ToolNote adds a standing sentence (degrade.ToolNote) to the declared
	// description of every protected tool in each model request, so the
	// model knows the unavailable payload before it meets one; not to a
	// tool whose breaker is in shadow mode, which never sends the payload.
	ToolNote bool
	// NoAutoGuard stops BeforeModel from replacing the request's protected
	// function tools by GuardedTools. Without a GuardedTool the handler
	// cannot tell a call the tool really ran from one an agent callback
	// refused or answered: such calls count as before in the closed state,
	// and in half-open their outcome releases the probe without deciding.
	// Guard tools explicitly (Handler.Guard) when turning this off.
	NoAutoGuard bool
	// NoAgentToolGuard stops BeforeModel from replacing the request's ADK
	// agent tools (package agenttool) by AgentTools: their sub-agents then
	// run as ADK runs them, on a runner without plugins, unprotected, and
	// their turns are not the caller's. See AgentTool.
	NoAgentToolGuard bool
	// RepeatLimit is N of the repeated-call guard: within one invocation,
	// the N-th call of a tool with the same canonical arguments (key order
	// and number forms do not matter; parallel calls count) that the
	// breaker admits is answered with a note (degrade.RepeatNote) instead
	// of running the tool; the next such call ends the turn
	// (TurnEndRepeatedCall). Calls the breaker refuses are its own (the
	// unavailable payload), and calls it counts as failures do not count
	// toward N. Calls count per ParallelAgent branch. If 0,
	// DefaultRepeatLimit (3); NoRepeatLimit turns the guard off. Otherwise
	// at least 2.
	RepeatLimit int
	// ToolRepeatLimits overrides RepeatLimit (and Dependency.RepeatLimit)
	// per tool name: NoRepeatLimit for a tool that is meant to be called
	// again with the same arguments (a polling tool), or the tool's own N.
	ToolRepeatLimits map[string]int
}

// Handler holds the ADK callbacks and their shared state. Its methods have
// the llmagent/plugin callback signatures, so they can be used in
// llmagent.Config directly or assembled into a plugin (package plugin).
//
// A Handler is safe for concurrent use: ADK runs parallel function calls of
// one invocation in separate goroutines.
type Handler struct {
	reg       *registry.Registry
	res       *resolver
	tix       *tickets
	ledger    *degrade.Ledger
	clock     registry.Clock
	obs       Observer
	callObs   CallObserver // obs, when it wants call durations; else nil
	guards    []ModelGuard
	turnLimit int
	scLimit   int
	maxCalls  int           // turn budget in model calls; 0: none
	maxDur    time.Duration // turn budget in time; 0: none
	maxTokens int64         // turn budget in tokens; 0: none (tokens.go)
	costObs   CostObserver  // obs, when it wants turn costs; else nil
	remove    bool
	log       *slog.Logger
	overflow  *loglimit.Limiter
	toolNote  bool
	// adm tells dependency clients sharing the registry (mcpguard) which
	// calls this handler admitted; the registry holds it weakly.
	adm       *registry.Admission
	autoGuard bool
	// agentGuard: BeforeModel replaces ADK's agent tools (chain.go).
	agentGuard bool
	agentToolCache

	mismatchOnce  sync.Once
	unguardedOnce sync.Once

	repeats     *repeatguard.Turns // repeat.go: nil while the guard is off for every tool
	marks       repeatguard.Marks
	repeatEnded repeatEnds
	ends        turnEnds  // turnend.go
	alts        *altCheck // alternatives.go
}

// New returns a Handler. Invalid configuration returns one error listing
// every problem.
func New(cfg Config) (*Handler, error) {
	var errs []error
	if cfg.Registry == nil {
		errs = append(errs, errors.New("registry: required"))
	}
	if cfg.ShortCircuitLimit < 0 {
		errs = append(errs, fmt.Errorf("short_circuit_limit: must be ≥ 0, got %d", cfg.ShortCircuitLimit))
	}
	if cfg.TurnLimit < 0 {
		errs = append(errs, fmt.Errorf("turn_limit: must be ≥ 0, got %d", cfg.TurnLimit))
	}
	if cfg.MaxModelCalls < 0 {
		errs = append(errs, fmt.Errorf("max_model_calls: must be ≥ 0, got %d", cfg.MaxModelCalls))
	}
	if cfg.MaxTurnTokens < 0 {
		errs = append(errs, fmt.Errorf("max_turn_tokens: must be ≥ 0, got %d", cfg.MaxTurnTokens))
	}
	if cfg.MaxTurnDuration < 0 {
		errs = append(errs, fmt.Errorf("max_turn_duration: must be ≥ 0, got %s", cfg.MaxTurnDuration))
	}
	if cfg.MaxInvocations < 0 || cfg.MaxInvocations > MaxTableSize {
		errs = append(errs, fmt.Errorf("max_invocations: must be in [0, %d], got %d", MaxTableSize, cfg.MaxInvocations))
	}
	if cfg.InvocationMaxAge < 0 {
		errs = append(errs, fmt.Errorf("invocation_max_age: must be ≥ 0, got %s", cfg.InvocationMaxAge))
	}
	if cfg.MaxPending < 0 || cfg.MaxPending > MaxTableSize {
		errs = append(errs, fmt.Errorf("max_pending: must be in [0, %d], got %d", MaxTableSize, cfg.MaxPending))
	}
	if cfg.Unmapped > PassThrough {
		errs = append(errs, fmt.Errorf("unmapped: unknown value %d", cfg.Unmapped))
	}
	for k, d := range cfg.Dependencies {
		if err := degrade.CheckName(string(k)); err != nil {
			errs = append(errs, fmt.Errorf("dependencies: a name %w", err))
			continue
		}
		if !k.Valid() {
			errs = append(errs, fmt.Errorf("dependencies[%q]: invalid key", k))
		}
		if err := checkRepeatLimit(d.RepeatLimit); err != nil {
			errs = append(errs, fmt.Errorf("dependencies[%q].repeat_limit: %w", k, err))
		}
		if d.LastGoodEntries < 0 || d.LastGoodEntries > MaxLastGoodEntries {
			errs = append(errs, fmt.Errorf("dependencies[%q].last_good_entries: must be in [0, %d], got %d", k, MaxLastGoodEntries, d.LastGoodEntries))
		}
	}
	if err := checkRepeatLimit(cfg.RepeatLimit); err != nil {
		errs = append(errs, fmt.Errorf("repeat_limit: %w", err))
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.ToolRepeatLimits)) {
		if err := checkRepeatLimit(cfg.ToolRepeatLimits[name]); err != nil {
			errs = append(errs, fmt.Errorf("tool_repeat_limits[%q]: %w", name, err))
		}
	}
	for i, g := range cfg.ModelGuards {
		if g == nil {
			errs = append(errs, fmt.Errorf("model_guards[%d]: nil", i))
		}
	}
	if cfg.Registry == nil {
		return nil, errors.Join(errs...)
	}
	errs = append(errs, checkTurnDuration(cfg)...)
	h := &Handler{
		reg: cfg.Registry, clock: cfg.Registry.Clock(), obs: cfg.Observer, guards: cfg.ModelGuards,
		turnLimit: cmp.Or(cfg.TurnLimit, DefaultTurnLimit), scLimit: cmp.Or(cfg.ShortCircuitLimit, DefaultShortCircuitLimit),
		remove: cfg.RemoveUnavailable, log: cfg.Logger, maxCalls: cfg.MaxModelCalls, maxDur: cfg.MaxTurnDuration,
		maxTokens: cfg.MaxTurnTokens,
		autoGuard: !cfg.NoAutoGuard, agentGuard: !cfg.NoAgentToolGuard,
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	res, err := newResolver(cfg.Registry, cfg.Mappings, cfg.Dependencies, cfg.Unmapped, h.scLimit)
	if err != nil {
		errs = append(errs, err)
	}
	if res != nil {
		res.repeatDefault = cmp.Or(cfg.RepeatLimit, DefaultRepeatLimit)
		res.repeatTools = maps.Clone(cfg.ToolRepeatLimits)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h.res = res
	if res.repeatDefault > 0 || len(cfg.ToolRepeatLimits) > 0 || anyRepeatLimit(cfg.Dependencies) {
		h.repeats = repeatguard.NewTurns(cmp.Or(cfg.MaxInvocations, degrade.DefaultMaxInvocations), cmp.Or(cfg.InvocationMaxAge, degrade.DefaultMaxAge))
	}
	h.alts = newAltCheck(cfg.Dependencies)
	h.toolNote = cfg.ToolNote
	h.overflow = loglimit.New(time.Minute, 1) // unprotected.go
	h.callObs, _ = h.obs.(CallObserver)
	h.costObs = costObserverOf(h.obs) // tokens.go
	h.tix = newTickets(cmp.Or(cfg.MaxPending, DefaultMaxPending))
	h.adm = registry.NewAdmission(h.admitted)
	cfg.Registry.AddAdmission(h.adm)
	h.ledger = degrade.NewLedger(degrade.LedgerOptions{MaxInvocations: cfg.MaxInvocations, MaxAge: cfg.InvocationMaxAge})
	return h, nil
}

// checkTurnDuration refuses a turn budget in time (MaxTurnDuration) that
// is not above a dependency's CallTimeout: the turn's deadline would cut
// every call of a hanging dependency before its own timeout, the cut call
// is excluded (the dependency is not to blame for the turn's clock), and
// the breaker would never open — an outage hidden turn after turn. Checked
// for the registry's default policy and every dependency the handler's
// configuration names (mappings, per-dependency options).
func checkTurnDuration(cfg Config) []error {
	if cfg.MaxTurnDuration <= 0 {
		return nil
	}
	var errs []error
	check := func(what string, p registry.Policy) {
		if p.CallTimeout >= cfg.MaxTurnDuration {
			errs = append(errs, fmt.Errorf("max_turn_duration: must be above every call_timeout (%s: %s), got %s: the turn's deadline would cut every call of a hanging dependency first, excluded, and its breaker would never open",
				what, p.CallTimeout, cfg.MaxTurnDuration))
		}
	}
	check("the default policy", cfg.Registry.PolicyFor(registry.Key("\x00default")))
	keys := map[registry.Key]bool{}
	for _, m := range cfg.Mappings {
		keys[m.Dependency] = true
	}
	for k := range cfg.Dependencies {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if p := cfg.Registry.PolicyFor(k); p.CallTimeout != cfg.Registry.PolicyFor(registry.Key("\x00default")).CallTimeout {
			check(fmt.Sprintf("dependency %q", k), p)
		}
	}
	return errs
}

// Registry returns the registry the handler uses.
func (h *Handler) Registry() *registry.Registry { return h.reg }

// BeforeTool asks the tool's dependency breaker. When the breaker refuses,
// it returns the model-readable unavailable payload (never an error: an error
// would run every OnToolError callback with the breaker's own refusal). When
// it admits, it records the call in the pending table, keyed by its tool
// context.
func (h *Handler) BeforeTool(ctx agent.ToolContext, t tool.Tool, args map[string]any) (map[string]any, error) {
	var bd *binding
	var flags callFlags
	if g, ok := t.(*GuardedTool); ok && g.h == h {
		bd, flags = g.binding(), flagGuarded
	} else {
		if at, ok := t.(*AgentTool); ok && at.h == h && !h.res.mapped(at.Name()) {
			// Its sub-run is protected inside, call by call (chain.go); the
			// caller re-invoking it with the same request is still a loop.
			if rb := at.repeatBinding(); rb.repeat > 0 && h.marks.Any() {
				if n := h.takeRepeat(ctx, rb, args); n >= rb.repeat {
					if note := h.repeatAnswer(ctx, rb, n); note != nil {
						return note, nil
					}
				}
			}
			return nil, nil
		}
		if h.res.framework(t) {
			bd = h.res.frameworkBinding(t.Name()) // ADK v2's own delegation tools: no breaker (resolver.framework)
		} else {
			bd = h.res.bind(t)
		}
	}
	// The repeated-call guard answers a repeat the breaker admits; a call
	// the breaker refuses is the breaker's (its payload says which
	// dependency and when to retry, and K and H count it): see
	// docs/design.md, "One answer per call".
	rep := 0
	if bd.repeat > 0 && h.marks.Any() {
		if rep = h.takeRepeat(ctx, bd, args); rep < bd.repeat {
			rep = 0
		} else if bd.br == nil || bd.shadow || bd.br.Admissible() {
			if note := h.repeatAnswer(ctx, bd, rep); note != nil {
				return note, nil // repeat.go: the tool does not run again
			}
			rep = 0
		}
	}
	if bd.br == nil {
		if bd.key != "" {
			h.unprotected(ctx, bd.key) // unprotected.go
		}
		return nil, nil
	}
	if flags&flagGuarded != 0 && bd.br.Admissible() {
		// A guarded tool's Run admits the call itself, closest to the
		// execution (GuardedTool.Run): nothing is recorded here. What the
		// breaker refuses now is refused below, before any other callback.
		return nil, nil
	}
	call, inv := ctx.FunctionCallID(), ctx.InvocationID()
	if rep == 0 && bd.br.Closed() && h.tix.reserve(ctx, call, inv, bd, flags) {
		return nil, nil
	}
	tk, d := bd.br.Reserve()
	if d.Shadow {
		// Shadow mode: the breaker would have refused; the call goes on,
		// untracked (its outcome is not counted, as if refused), and the
		// would-be short-circuit is observed with Shadow set. A guarded
		// call is marked so that its Run does not ask again.
		h.observeShadow(ctx, bd, d, inv)
		if flags&flagGuarded != 0 {
			h.tix.put(ctx, call, inv, registry.Reservation{}, bd, flagGuarded|flagShadow)
		}
		return nil, nil
	}
	if d.Allowed {
		if rep != 0 {
			// Admitted after all (a probe, or a slot freed): the repeat
			// is the guard's to answer, and the admission is given back.
			if note := h.repeatAnswer(ctx, bd, rep); note != nil {
				tk.Report(registry.Excluded, 0)
				return note, nil
			}
		}
		if !h.tix.put(ctx, call, inv, tk, bd, flags) {
			tk.Report(registry.Excluded, 0) // already pending: never track a call twice
		}
		return nil, nil
	}
	return h.shortCircuit(ctx, bd, d, args), nil
}

func (h *Handler) observeShadow(ctx context.Context, bd *binding, d registry.Decision, inv string) {
	if h.obs != nil {
		h.obs.ShortCircuit(ctx, ShortCircuitEvent{
			Dependency: bd.key, Tool: bd.tool, Reason: reasonOf(d.Reason), State: d.State,
			RetryAfter: d.RetryAfter, InvocationID: inv, Shadow: true,
		})
	}
}

// admitted reports whether call (an agent.ToolContext) is a call BeforeTool
// admitted on key's breaker and whose outcome is still to be reported.
func (h *Handler) admitted(call any, key registry.Key) bool {
	ctx, ok := adkctx.Tool(call)
	if d, isDeadline := ctx.(*deadlineToolContext); isDeadline {
		ctx = d.toolContext // a GuardedTool's CallTimeout context: the call's own tool context inside
	}
	if !ok || ctx == nil || !reflect.TypeOf(ctx).Comparable() {
		return false // not a call this handler could have admitted (pending calls are keyed by identity)
	}
	k, ok := h.tix.pendingKey(ctx, ctx.FunctionCallID())
	return ok && k == key
}

func (h *Handler) shortCircuit(ctx agent.ToolContext, bd *binding, d registry.Decision, args map[string]any) map[string]any {
	inv := ctx.InvocationID()
	now := d.At
	if now.IsZero() {
		now = h.clock.Now()
	}
	key, f := chainOf(ctx, inv) // a sub-run counts in its root turn (chain.go)
	n, total := h.ledger.Hit(key, string(bd.key), now)
	var lg *degrade.LastGood
	if bd.lastGood != nil {
		if v, ok := bd.lastGood.Load(scopeOf(ctx), args); ok {
			lg = &degrade.LastGood{Result: v.Result, AgeSeconds: int(now.Sub(v.At) / time.Second)}
		}
	}
	reason := reasonOf(d.Reason)
	noteRefused(f, bd.key, reason)
	if bd.repeat > 0 {
		h.uncountCall(ctx, bd, args) // a refused call is the breaker's, not a repeat
	}
	p := bd.builder.Build(reason, d.RetryAfter, n, lg)
	if total >= h.turnLimit {
		// The invocation's budget is spent: BeforeModel will end the turn.
		// Escalate so that a LoopAgent (which ignores errors and only stops on
		// escalation) exits after this iteration instead of spinning.
		ctx.Actions().Escalate = true
	}
	if h.obs != nil {
		h.obs.ShortCircuit(ctx, ShortCircuitEvent{
			Dependency: bd.key, Tool: bd.tool, Reason: reason, State: d.State, RetryAfter: d.RetryAfter,
			ThisTurn: n, TurnTotal: total, Terminal: n >= h.scLimit, InvocationID: inv,
		})
	}
	return p
}

func reasonOf(r registry.Refusal) degrade.Reason {
	switch r {
	case registry.RefusedProbeBusy:
		return degrade.ReasonHalfOpenBusy
	case registry.RefusedIsolated:
		return degrade.ReasonIsolated
	case registry.RefusedSaturated:
		return degrade.ReasonSaturated
	default:
		return degrade.ReasonCircuitOpen
	}
}

// OnToolError reports the raw error of an admitted call, classified. A
// guarded call (see GuardedTool) whose tool never ran — an agent's own
// before-tool callback refused it — is released without counting; one whose
// tool ran was already reported by the tool's Run. It always returns
// (nil, nil) so later plugins and agent callbacks still see the error.
func (h *Handler) OnToolError(ctx agent.ToolContext, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	call := ctx.FunctionCallID()
	f, found := h.tix.sawError(ctx, call)
	if !found {
		return nil, nil // not admitted by us: our own short-circuit, or a tool the model invented
	}
	if f&flagGuarded != 0 {
		if f&flagRan == 0 {
			tk, _ := h.tix.take(ctx, call)
			tk.Report(registry.Excluded, 0)
		}
		return nil, nil // the rest is AfterTool's
	}
	tk, bd := h.tix.take(ctx, call)
	if bd == nil {
		return nil, nil
	}
	o := h.classify(ctx, bd, err)
	h.reportUnmarked(tk, bd, o, RetryHint(err))
	if o == registry.Failure {
		h.uncountCall(ctx, bd, args) // its retries are the breaker's to stop
	}
	return nil, nil
}

// AfterTool reports the outcome of an admitted call that neither the tool's
// Run (guarded calls) nor OnToolError already reported. A call without a
// ticket is the plugin's own short-circuit (ADK runs after-tool callbacks
// even then) and is ignored. It always returns (nil, nil).
//
// A guarded call whose tool never ran (an agent callback answered it, from
// a cache say) counts neither way. A guarded call whose tool failed while
// AfterTool is shown a success (a plugin registered ahead, such as ADK's
// retryandreflect, turned the error into a result) was counted as the
// failure it was; the mismatch is logged once and counted (Observer).
func (h *Handler) AfterTool(ctx agent.ToolContext, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	if h.maxCalls > 0 || h.maxDur > 0 || h.maxTokens > 0 {
		h.escalateIfSpent(ctx)
	}
	s := h.tix.shard(ctx.FunctionCallID())
	if s.empty() {
		// Nothing pending where this call would be: the plugin's own
		// short-circuit, or a guarded call its Run already reported and
		// removed (see GuardedTool.Run). No lock taken.
		return nil, nil
	}
	plain := err == nil && !isReflection(result)
	if g, guarded := t.(*GuardedTool); plain && (!guarded || g.h != h) { // a guarded call takes the full path: one lock, not two
		bd, found, handled := s.takePlainSuccess(ctx)
		if !found {
			return nil, nil
		}
		if handled { // an ordinary success, reported in place
			h.storeLastGood(ctx, bd, args, result)
			return nil, nil
		}
	}
	p, found := s.takeEntry(ctx)
	if !found {
		return nil, nil
	}
	bd := p.bd
	switch {
	case p.flags&flagGuarded != 0:
		switch {
		case p.flags&flagReported != 0:
			// The tool erred, the handler's OnToolError never saw it, and
			// AfterTool is shown a success: a plugin ahead rewrote it. (An
			// agent's own OnToolError recovering the error runs after the
			// handler's, which saw it: that is no mismatch.)
			if p.flags&(flagToolErr|flagSawErr) == flagToolErr && err == nil {
				h.mismatch(ctx, bd, t)
			}
		default: // never ran (or Run panicked): nothing to count
			p.tk.Report(registry.Excluded, 0)
		}
	case err == nil && !plain:
		// Unguarded, and shown retryandreflect's reflection of an error as
		// a success: a failure (of the tool, or of a callback ahead of it).
		h.mismatch(ctx, bd, t)
		h.reportUnmarked(p.tk, bd, registry.Failure, 0)
		h.uncountCall(ctx, bd, args)
	case err == nil:
		h.reportUnmarked(p.tk, bd, registry.Success, 0)
		h.storeLastGood(ctx, bd, args, result)
	default:
		o := h.classify(ctx, bd, err)
		h.reportUnmarked(p.tk, bd, o, RetryHint(err))
		if o == registry.Failure {
			h.uncountCall(ctx, bd, args)
		}
	}
	return nil, nil
}

// reportUnmarked reports the outcome of a call no GuardedTool marked: the
// handler cannot tell whether the tool ran or a callback produced the
// outcome. Outcomes count as before in the closed state; a half-open probe
// is released without deciding, since only a real execution may close or
// reopen a breaker.
func (h *Handler) reportUnmarked(tk registry.Reservation, bd *binding, o registry.Outcome, hint time.Duration) {
	if tk.Probe() && o != registry.Excluded {
		h.unguardedOnce.Do(func() {
			h.log.Warn("adkbreaker: a half-open probe of an unguarded tool was released without deciding: the breaker cannot tell whether the tool ran; guard the tool (Handler.Guard) or keep auto-guarding on",
				"dependency", string(bd.key), "tool", bd.tool)
		})
		o, hint = registry.Excluded, 0
	}
	tk.Report(o, hint)
}

func (h *Handler) storeLastGood(ctx agent.ToolContext, bd *binding, args, result map[string]any) {
	if bd != nil && bd.lastGood != nil && result != nil {
		bd.lastGood.Store(scopeOf(ctx), args, result, h.clock.Now())
	}
}

// reflectionType is the response_type ADK's retryandreflect plugin puts in
// the result it makes of a tool error.
const reflectionType = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"

func isReflection(result map[string]any) bool {
	// retryandreflect's results have five keys (ADK v1.7.0): a smaller
	// result cannot be one, and most successes are spared the map lookup
	// (about 50 instructions on the closed path).
	if len(result) < 5 {
		return false
	}
	rt, _ := result["response_type"].(string)
	return rt == reflectionType
}

// mismatch reports a failed call that AfterTool is shown as a success: a
// plugin registered ahead of adkbreaker rewrote the outcome. Logged once
// (it is a setup error), counted every time.
func (h *Handler) mismatch(ctx agent.ToolContext, bd *binding, t tool.Tool) {
	h.mismatchOnce.Do(func() {
		h.log.Error("adkbreaker: a failed tool call reached the breaker's after-tool callback as a success: a plugin registered ahead of adkbreaker (ADK's retryandreflect, say) rewrites tool errors; register adkbreaker first. The breaker counts the real outcome where the tool is guarded.",
			"dependency", string(bd.key), "tool", bd.tool)
	})
	if mo, ok := h.obs.(MismatchObserver); ok {
		mo.OutcomeMismatch(ctx, MismatchEvent{Dependency: bd.key, Tool: bd.tool, InvocationID: ctx.InvocationID()})
	}
}

// scopeOf is the last-good cache scope of a call: results are only ever
// offered back to the same user of the same app.
func scopeOf(ctx agent.ReadonlyContext) string {
	return ctx.AppName() + "\x00" + ctx.UserID()
}

// classify classifies a failed call's error.
func (h *Handler) classify(ctx context.Context, bd *binding, err error) registry.Outcome {
	if ctx.Err() != nil {
		// The caller cancelled, or the caller's own deadline passed: not the
		// dependency's fault.
		return registry.Excluded
	}
	if bd.classify != nil {
		if o, ok := bd.classify(err); ok {
			return o
		}
	}
	return Classify(err)
}

// escalateIfSpent sets Escalate on the tool call's actions when the
// invocation's turn budget is spent, so that the next model call will be
// answered by BeforeModel: a LoopAgent (which only stops on escalation) then
// exits after this iteration instead of running its sub-agents again.
func (h *Handler) escalateIfSpent(ctx agent.ToolContext) {
	key, _ := chainOf(ctx, ctx.InvocationID())
	if u, ok := h.ledger.UsageOf(key); ok && !u.Ended && h.budgetSpent(u, h.clock.Now()) {
		ctx.Actions().Escalate = true
	}
}

// budgetSpent reports whether the next model call of an invocation with
// usage u would exceed the turn budget.
func (h *Handler) budgetSpent(u degrade.Usage, now time.Time) bool {
	return h.maxCalls > 0 && u.ModelCalls >= h.maxCalls || h.maxDur > 0 && now.Sub(u.Started) >= h.maxDur ||
		h.maxTokens > 0 && u.Tokens >= h.maxTokens
}

// BeforeRun starts the clock of the turn budget in time (MaxTurnDuration).
// It returns (nil, nil).
func (h *Handler) BeforeRun(ctx agent.InvocationContext) (*genai.Content, error) {
	if h.maxDur > 0 {
		key, _ := chainOf(ctx, ctx.InvocationID()) // a sub-run's turn started with its root's
		h.ledger.Begin(key, h.clock.Now())
	}
	return nil, nil
}

// AfterRun frees the invocation's state whatever way the run ended: pending
// tickets are abandoned as Excluded (freeing probe slots) and the
// short-circuit accounting is released.
func (h *Handler) AfterRun(ctx agent.InvocationContext) {
	inv := ctx.InvocationID()
	if h.costObs != nil {
		h.turnCost(ctx, inv) // tokens.go
	}
	h.tix.drain(inv)
	h.ledger.Release(inv)
	h.repeatEnded.release(inv)
	h.marks.ReleaseRun(inv)
	h.ends.release(inv)
	if h.repeats != nil {
		h.repeats.Release(inv) // a root run's counts (a sub-run has none of its own)
	}
}

// BeforeModel ends the turn when the invocation's short-circuit budget or
// turn budget is spent or every endpoint of the model is unavailable,
// returning a final model response the user can read; otherwise it guards
// the request's protected function tools (GuardedTool; ADK dispatches the
// calls of this model response from req.Tools) and marks (or removes) the
// declarations of tools whose dependency is open, so the model knows before
// it tries.
func (h *Handler) BeforeModel(ctx agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
	// A sub-run (chain.go) counts in its root's turn, inv; it ends its own
	// turn (mark), sub, so that its caller's turn can still answer.
	rk := runOf(ctx)
	inv, f := chainOf(ctx, rk.Run)
	sub := inv
	if f != nil {
		sub = rk.Run
	}
	if resp, err, done := h.ends.check(ctx, sub); done {
		return resp, err // the turn ended: its final answer (up to maxFinalReads per agent and branch), then ErrTurnEnded
	}
	if f != nil {
		if _, ended := h.ledger.State(sub); ended {
			return nil, ErrTurnEnded
		}
	}
	if r, ok := h.repeatEnded.take(rk); ok {
		return h.endRepeated(ctx, inv, rk, r), nil // repeat.go
	}
	if h.maxCalls > 0 || h.maxDur > 0 || h.maxTokens > 0 {
		now := h.clock.Now()
		u := h.ledger.ModelCall(inv, now)
		switch {
		case u.Ended:
			return nil, ErrTurnEnded
		case u.Total >= h.turnLimit:
			return h.endTurn(ctx, inv, sub, u, TurnEndShortCircuitBudget), nil
		case h.maxCalls > 0 && u.ModelCalls > h.maxCalls:
			return h.endTurn(ctx, inv, sub, u, TurnEndModelCallBudget), nil
		case h.maxDur > 0 && now.Sub(u.Started) >= h.maxDur:
			return h.endTurn(ctx, inv, sub, u, TurnEndTimeBudget), nil
		case h.maxTokens > 0 && u.Tokens >= h.maxTokens:
			return h.endTurn(ctx, inv, sub, u, TurnEndTokenBudget), nil
		}
	} else {
		switch total, ended := h.ledger.State(inv); {
		case ended:
			return nil, ErrTurnEnded
		case total >= h.turnLimit:
			return h.endTurn(ctx, inv, sub, degrade.Usage{Total: total}, TurnEndShortCircuitBudget), nil
		}
	}
	if (h.autoGuard || h.agentGuard) && req != nil && len(req.Tools) > 0 {
		h.guardRequest(req)
	}
	if req != nil && h.alts.left.Load() != 0 {
		h.checkAlternatives(ctx, ctx.AgentName(), req) // alternatives.go
	}
	if req != nil {
		for _, g := range h.guards {
			if down, ra := g.ModelUnavailable(req.Model); down {
				now := h.clock.Now()
				_, total := h.ledger.Hit(inv, "model:"+req.Model, now)
				resp := finalResponse(degrade.ModelUnavailableMessage(ra), string(TurnEndModelUnavailable))
				h.ends.end(ctx, runKey{Run: sub, Branch: ctx.Branch()}, true, resp)
				h.ledger.End(sub, now)
				if h.obs != nil {
					h.obs.TurnEnded(ctx, TurnEndEvent{InvocationID: inv, Reason: TurnEndModelUnavailable, TurnTotal: total})
				}
				return resp, nil
			}
		}
	}
	if h.toolNote && req != nil && req.Config != nil {
		h.addToolNote(req) // toolnote.go
	}
	if req == nil || req.Config == nil || !h.reg.AnyUnavailable() {
		return nil, nil
	}
	h.annotate(ctx, inv, req)
	return nil, nil
}

// endTurn ends the turn of sub (inv itself, or a sub-run of inv) for
// reason and returns the final answer: what was unavailable in inv's turn
// (the dependencies it short-circuited) and when to try again.
func (h *Handler) endTurn(ctx agent.CallbackContext, inv, sub string, u degrade.Usage, reason TurnEndReason) *model.LLMResponse {
	items := h.unavailableIn(inv)
	var resp *model.LLMResponse
	if reason == TurnEndShortCircuitBudget {
		resp = finalResponse(degrade.FinalMessage(items), string(reason))
	} else {
		resp = finalResponse(degrade.TurnBudgetMessage(items), string(reason))
	}
	h.ends.end(ctx, runKey{Run: sub, Branch: ctx.Branch()}, true, resp)
	h.ledger.End(sub, h.clock.Now())
	if h.obs != nil {
		h.obs.TurnEnded(ctx, TurnEndEvent{InvocationID: inv, Reason: reason, TurnTotal: u.Total, ModelCalls: u.ModelCalls})
	}
	return resp
}

// unavailableIn lists the dependencies short-circuited in turn inv, with
// when each may be tried again.
func (h *Handler) unavailableIn(inv string) []degrade.Unavailable {
	counts := h.ledger.Counts(inv)
	items := make([]degrade.Unavailable, 0, len(counts))
	for _, c := range counts {
		var ra time.Duration
		if br, ok := h.reg.Lookup(registry.Key(c.Dependency)); ok {
			ra = br.RetryAfter()
		}
		items = append(items, degrade.Unavailable{Dependency: c.Dependency, RetryAfter: ra})
	}
	return items
}

// finalResponse is a complete model turn: role "model" (so it is kept in
// history), non-partial, with text the user can read.
func finalResponse(text, reason string) *model.LLMResponse {
	return &model.LLMResponse{
		Content:      genai.NewContentFromText(text, genai.RoleModel),
		TurnComplete: true,
		FinishReason: genai.FinishReasonStop,
		CustomMetadata: map[string]any{
			"adkbreaker": map[string]any{"ended_turn": true, "reason": reason},
		},
	}
}

// annotate rewrites the request's function declarations for tools whose
// dependency is unavailable. Declarations are cloned: a tool may hand out the
// same declaration to every request. A tool whose breaker is in shadow mode
// is left as it is (shadow mode changes nothing the model reads); what
// would have been done to it is reported to a ShadowObserver instead.
func (h *Handler) annotate(ctx context.Context, inv string, req *model.LLMRequest) {
	for ti, gt := range req.Config.Tools {
		if gt == nil || len(gt.FunctionDeclarations) == 0 {
			continue
		}
		var decls []*genai.FunctionDeclaration
		changed := false
		for i, fd := range gt.FunctionDeclarations {
			bd, ra, down := h.unavailable(req, fd)
			if down && bd.shadow {
				if so, ok := h.obs.(ShadowObserver); ok {
					so.ShadowAnnotation(ctx, ShadowAnnotationEvent{
						Dependency: bd.key, Tool: bd.tool, Removed: h.remove, RetryAfter: ra, InvocationID: inv,
					})
				}
				down = false
			}
			if !down {
				if changed {
					decls = append(decls, fd)
				}
				continue
			}
			if !changed {
				decls = append(make([]*genai.FunctionDeclaration, 0, len(gt.FunctionDeclarations)), gt.FunctionDeclarations[:i]...)
				changed = true
			}
			if h.remove {
				continue
			}
			c := *fd
			c.Description = degrade.Annotate(fd.Description, ra)
			decls = append(decls, &c)
		}
		if changed {
			if len(decls) == 0 {
				req.Config.Tools[ti] = nil // dropped below: an empty tool is rejected by the API
				continue
			}
			ng := *gt
			ng.FunctionDeclarations = decls
			req.Config.Tools[ti] = &ng
		}
	}
	if slices.Contains(req.Config.Tools, nil) {
		req.Config.Tools = slices.DeleteFunc(slices.Clone(req.Config.Tools), func(t *genai.Tool) bool { return t == nil })
	}
}

// unavailable reports whether the declared tool fd's breaker would refuse
// a call now, with its binding and retry time.
func (h *Handler) unavailable(req *model.LLMRequest, fd *genai.FunctionDeclaration) (*binding, time.Duration, bool) {
	if fd == nil {
		return nil, 0, false
	}
	t, ok := req.Tools[fd.Name].(tool.Tool)
	if !ok {
		return nil, 0, false
	}
	bd := h.res.lookupTool(t)
	if bd == nil || bd.br == nil {
		return nil, 0, false
	}
	st := bd.br.State()
	if st == registry.StateClosed {
		return nil, 0, false
	}
	ra := bd.br.RetryAfter()
	if ra <= 0 {
		return nil, 0, false // a probe may go through now: offer the tool
	}
	return bd, ra, true
}

// Pending returns how many admitted tool calls await an outcome, and how many
// invocations hold short-circuit accounting. Both return to zero when every
// run has ended; tests and health checks use them.
func (h *Handler) Pending() (tickets, invocations int) {
	return h.tix.len(), h.ledger.Len() + h.repeatEnded.len() + h.marks.Runs() + h.ends.len() + h.repeats.Len()
}
