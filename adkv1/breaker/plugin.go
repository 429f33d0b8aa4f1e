package breaker

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	adkplugin "google.golang.org/adk/plugin"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// DefaultName is the plugin's ADK name.
const DefaultName = "adkbreaker"

// Option configures New. Options apply in order; later ones win.
type Option interface{ apply(*settings) }

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

type settings struct {
	name    string
	reg     *registry.Registry
	regOpts []registry.Option
	cb      callbacks.Config
	files   []*config.File
	// fileRegOpts counts the entries of regOpts that came from files.
	fileRegOpts int
	errs        []error
	tel         *telemetryConfig // telemetry.go; nil when off
	// noBreakerLog turns the transition and failure lines off (logging.go).
	noBreakerLog bool
	// costs receive turn costs (cost.go).
	costs []observe.CostObserver
}

// WithName sets the plugin name (ADK requires unique names). Default "adkbreaker".
func WithName(name string) Option {
	return optionFunc(func(s *settings) { s.name = name })
}

// WithRegistry shares an existing registry (with failover models, MCP
// toolsets, other agents). Registry options (WithPolicy, WithClock, …) then
// conflict and are reported as errors. With a configuration file, build the
// registry from it and give the plugin both:
//
//	f, err := config.Load("adkbreaker.yaml")
//	reg, err := registry.New(f.RegistryOptions()...) // failover.RegistryOptions(f) with models
//	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithConfig(f))
//
// A registry built from a file, shared without WithConfig, is an error:
// the file's tool mappings would not apply.
func WithRegistry(r *registry.Registry) Option {
	return optionFunc(func(s *settings) {
		if r == nil {
			s.errs = append(s.errs, errors.New("registry: must not be nil"))
		}
		s.reg = r
	})
}

// WithDefaultPolicy sets the policy of dependencies without one of their own.
func WithDefaultPolicy(p registry.Policy) Option {
	return optionFunc(func(s *settings) { s.regOpts = append(s.regOpts, registry.WithDefaultPolicy(p)) })
}

// WithPolicy sets one dependency's policy.
func WithPolicy(dep registry.Key, p registry.Policy) Option {
	return optionFunc(func(s *settings) { s.regOpts = append(s.regOpts, registry.WithPolicy(dep, p)) })
}

// WithClock sets the time source (tests pass registrytest.FakeClock).
func WithClock(c registry.Clock) Option {
	return optionFunc(func(s *settings) { s.regOpts = append(s.regOpts, registry.WithClock(c)) })
}

// WithHealthCheck registers a cheap health check of dependency dep (a
// ping, a status endpoint): half-open probes run it instead of a user's
// call, which is refused with half_open_busy and the time the check is
// expected to take, at most its timeout (registry option; see
// registry.HealthCheck).
func WithHealthCheck(dep registry.Key, check registry.HealthCheck) Option {
	return optionFunc(func(s *settings) { s.regOpts = append(s.regOpts, registry.WithHealthCheck(dep, check)) })
}

// WithMaxBreakers caps the number of breakers.
func WithMaxBreakers(n int) Option {
	return optionFunc(func(s *settings) { s.regOpts = append(s.regOpts, registry.WithMaxBreakers(n)) })
}

// WithDependency maps tools (names or path.Match patterns) to one dependency,
// so they share its breaker.
func WithDependency(dep registry.Key, tools ...string) Option {
	return optionFunc(func(s *settings) {
		s.cb.Mappings = append(s.cb.Mappings, callbacks.Mapping{Dependency: dep, Tools: tools})
	})
}

// WithDependencyOptions sets per-dependency options: alternatives, the
// last-good cache, a classification override.
func WithDependencyOptions(dep registry.Key, o callbacks.Dependency) Option {
	return optionFunc(func(s *settings) {
		if s.cb.Dependencies == nil {
			s.cb.Dependencies = map[registry.Key]callbacks.Dependency{}
		}
		s.cb.Dependencies[dep] = o
	})
}

// WithUnmappedTools says what happens to tools no mapping names.
func WithUnmappedTools(u callbacks.Unmapped) Option {
	return optionFunc(func(s *settings) { s.cb.Unmapped = u })
}

// WithShortCircuitLimit sets K: from the K-th short-circuit of one dependency
// in an invocation, the payload tells the model to stop calling it. Default 2.
func WithShortCircuitLimit(k int) Option {
	return optionFunc(func(s *settings) { s.cb.ShortCircuitLimit = k })
}

// WithTurnLimit sets H: after H short-circuits in an invocation the turn
// ends with a final answer naming what is unavailable. Default 5.
func WithTurnLimit(h int) Option {
	return optionFunc(func(s *settings) { s.cb.TurnLimit = h })
}

// WithTurnBudget bounds every invocation: after maxModelCalls model calls,
// or once maxDuration has passed since the run started (measured with the
// registry's clock), BeforeModel answers the next model call itself with a
// final answer saying what was unavailable, and the tool call that spent the
// budget escalates so that a LoopAgent stops. 0 means no limit (the
// default for both); ADK Go itself has no such cap.
func WithTurnBudget(maxModelCalls int, maxDuration time.Duration) Option {
	return optionFunc(func(s *settings) { s.cb.MaxModelCalls, s.cb.MaxTurnDuration = maxModelCalls, maxDuration })
}

// WithTokenBudget bounds every root turn in tokens: once the usage
// metadata of its model responses (sub-agents reached through agent tools
// included) adds up to maxTurnTokens or more, BeforeModel answers the next
// model call itself with the turn budget's final answer (reason
// token_budget), so a turn spends at most one model call past the budget.
// 0 means no limit (the default). File key: defaults.max_turn_tokens.
func WithTokenBudget(maxTurnTokens int64) Option {
	return optionFunc(func(s *settings) { s.cb.MaxTurnTokens = maxTurnTokens })
}

// WithRemoveUnavailable removes unavailable tools from the model request
// instead of marking their descriptions.
func WithRemoveUnavailable() Option {
	return optionFunc(func(s *settings) { s.cb.RemoveUnavailable = true })
}

// WithToolNote adds a standing sentence to the description of every
// protected tool in each model request: "If this tool returns status
// "unavailable", its service is down: do not call it again in this turn;
// tell the user what is missing and continue without it." (degrade.ToolNote).
// Declarations are cloned, so the note appears once however often a tool
// hands out the same declaration. See docs/payloads.md.
func WithToolNote() Option {
	return optionFunc(func(s *settings) { s.cb.ToolNote = true })
}

// WithModelGuard lets BeforeModel end a turn readably when every endpoint of
// a failover model is unavailable.
func WithModelGuard(g callbacks.ModelGuard) Option {
	return optionFunc(func(s *settings) { s.cb.ModelGuards = append(s.cb.ModelGuards, g) })
}

// WithObserver receives short-circuit and turn-end events (telemetry).
func WithObserver(o callbacks.Observer) Option {
	return optionFunc(func(s *settings) { s.cb.Observer = o })
}

// WithLogger sets the logger for warnings and for the breaker log lines
// (transitions, short-circuits, ended turns; see WithoutBreakerLog).
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(s *settings) { s.cb.Logger = l })
}

// WithoutToolGuard stops the plugin from guarding the request's protected
// function tools (callbacks.Config.NoAutoGuard). Without a guard the plugin
// cannot tell a call the tool really ran from one an agent's own callback
// refused or answered: see docs/design.md. Guard tools explicitly
// (Handler.Guard) if you turn this off.
func WithoutToolGuard() Option {
	return optionFunc(func(s *settings) { s.cb.NoAutoGuard = true })
}

// WithoutAgentToolGuard stops the plugin from standing in for ADK's agent
// tools (callbacks.Config.NoAgentToolGuard). Their sub-agents then run as
// ADK runs them, on a runner of their own without plugins: unprotected, and
// counted in no turn. See docs/design.md ("Chains").
func WithoutAgentToolGuard() Option {
	return optionFunc(func(s *settings) { s.cb.NoAgentToolGuard = true })
}

// WithInvocationLimits bounds per-invocation state: how many invocations are
// tracked and the backstop age for runs whose AfterRun never fires.
func WithInvocationLimits(maxInvocations int, maxAge time.Duration) Option {
	return optionFunc(func(s *settings) {
		s.cb.MaxInvocations, s.cb.InvocationMaxAge = maxInvocations, maxAge
	})
}

// WithConfig applies a configuration file's dependencies, mappings, policies
// and limits. Options given after it override it.
func WithConfig(f *config.File) Option {
	return optionFunc(func(s *settings) {
		if f == nil {
			s.errs = append(s.errs, errors.New("config: must not be nil"))
			return
		}
		s.applyFile(f)
	})
}

// WithConfigFile loads and applies a YAML or JSON configuration file.
func WithConfigFile(path string) Option {
	return optionFunc(func(s *settings) {
		f, err := config.Load(path)
		if err != nil {
			s.errs = append(s.errs, err)
			return
		}
		s.applyFile(f)
	})
}

func (s *settings) applyFile(f *config.File) {
	ro := f.RegistryOptions()
	s.regOpts = append(s.regOpts, ro...)
	s.fileRegOpts += len(ro)
	s.files = append(s.files, f)
	d := f.Defaults
	if d.ShortCircuitLimit != 0 {
		s.cb.ShortCircuitLimit = d.ShortCircuitLimit
	}
	if d.TurnLimit != 0 {
		s.cb.TurnLimit = d.TurnLimit
	}
	if d.MaxModelCalls != 0 {
		s.cb.MaxModelCalls = d.MaxModelCalls
	}
	if d.MaxTurnTokens != 0 {
		s.cb.MaxTurnTokens = int64(d.MaxTurnTokens)
	}
	if d.MaxTurnDuration != 0 {
		s.cb.MaxTurnDuration = time.Duration(d.MaxTurnDuration)
	}
	if d.RemoveUnavailable {
		s.cb.RemoveUnavailable = true
	}
	s.applyRepeatLimits(f) // repeat.go
	if d.ToolNote {
		s.cb.ToolNote = true
	}
	if d.UnmappedTools == "pass_through" {
		s.cb.Unmapped = callbacks.PassThrough
	}
	for _, name := range slices.Sorted(maps.Keys(f.Dependencies)) {
		dep := f.Dependencies[name]
		key := registry.Key(name)
		if len(dep.Tools) > 0 {
			s.cb.Mappings = append(s.cb.Mappings, callbacks.Mapping{Dependency: key, Tools: dep.Tools})
		}
		if len(dep.Alternatives) > 0 || dep.CacheLastGood {
			if s.cb.Dependencies == nil {
				s.cb.Dependencies = map[registry.Key]callbacks.Dependency{}
			}
			o := s.cb.Dependencies[key]
			o.Alternatives, o.CacheLastGood = dep.Alternatives, dep.CacheLastGood
			s.cb.Dependencies[key] = o
		}
	}
}

// NewHandler builds the callbacks handler New assembles, for callers that
// want the handler itself (llmagent.Config callbacks, Pending in tests).
func NewHandler(opts ...Option) (*callbacks.Handler, error) {
	h, _, err := build(opts)
	return h, err
}

func build(opts []Option) (*callbacks.Handler, string, error) {
	s := settings{name: DefaultName}
	for _, o := range opts {
		if o == nil {
			s.errs = append(s.errs, errors.New("nil option"))
			continue
		}
		o.apply(&s)
	}
	errs := s.errs
	if s.name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	reg := s.reg
	switch {
	case reg != nil:
		if len(s.regOpts) > s.fileRegOpts {
			errs = append(errs, errors.New("registry options (WithPolicy, WithDefaultPolicy, WithClock, WithMaxBreakers, WithHealthCheck) cannot be combined with WithRegistry; configure the shared registry instead"))
		}
		// A configuration file's policies must already be the shared
		// registry's (build it with File.RegistryOptions()): never ignore
		// a policy silently.
		for _, f := range s.files {
			errs = append(errs, policyMismatches(f, reg)...)
		}
		// A registry built from a file (File.RegistryOptions) holds only its
		// policies: the file's tool mappings, alternatives and limits reach
		// the plugin through WithConfig alone. Without it the file's tools
		// would silently get breakers of their own, by tool name.
		if f, ok := reg.Source().(*config.File); ok && f != nil && len(s.files) == 0 && pluginSettings(f) {
			errs = append(errs, errors.New("the shared registry was built from a configuration file (File.RegistryOptions) but the plugin was not given the file: its dependencies' tools, alternatives and limits would not apply; add breaker.WithConfig(f)"))
		}
	default:
		r, err := registry.New(s.regOpts...)
		if err != nil {
			errs = append(errs, err)
		}
		reg = r
	}
	if reg == nil {
		// Still check the rest of the configuration, so that every problem
		// is reported at once.
		s.cb.Registry = registry.MustNew()
		if _, err := callbacks.New(s.cb); err != nil {
			errs = append(errs, err)
		}
		return nil, "", fmt.Errorf("adkbreaker: %w", errors.Join(errs...))
	}
	s.cb.Registry = reg
	s.attachCosts(&s.cb)              // cost.go: adds its Observers
	startLog := s.breakerLog(&s.cb)   // logging.go: adds its Observer
	watch, err := s.tel.attach(&s.cb) // telemetry.go: adds its Observer
	if err != nil {
		errs = append(errs, err)
	}
	h, err := callbacks.New(s.cb)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("adkbreaker: %w", err)
	}
	watch(h)
	startLog(h)
	return h, s.name, nil
}

// pluginSettings reports whether f holds anything the plugin applies
// (applyFile) beyond the registry's policies.
func pluginSettings(f *config.File) bool {
	d := f.Defaults
	return len(f.Dependencies) > 0 || d.ShortCircuitLimit != 0 || d.TurnLimit != 0 || d.MaxModelCalls != 0 || d.MaxTurnTokens != 0 ||
		d.MaxTurnDuration != 0 || d.RemoveUnavailable || d.UnmappedTools == "pass_through" || d.ToolNote
}

// policyMismatches reports the file's dependency and default policies that
// differ from the shared registry's.
func policyMismatches(f *config.File, reg *registry.Registry) []error {
	var errs []error
	if want, got := f.Defaults.Policy.Registry().WithDefaults(), reg.DefaultPolicy(); want != got {
		errs = append(errs, errors.New("defaults.policy: differs from the shared registry's default policy; build the registry with File.RegistryOptions() (failover.RegistryOptions(f) when the file has models)"))
	}
	for _, name := range slices.Sorted(maps.Keys(f.Dependencies)) {
		if f.Dependencies[name].Policy == nil {
			continue
		}
		if want, got := f.PolicyFor(name).WithDefaults(), reg.PolicyFor(registry.Key(name)); want != got {
			errs = append(errs, fmt.Errorf("dependencies.%s.policy: differs from the shared registry's policy for %q; build the registry with File.RegistryOptions() (failover.RegistryOptions(f) when the file has models)", name, name))
		}
	}
	return errs
}

// New returns the adkbreaker ADK plugin. Register it FIRST in
// runner.PluginConfig.Plugins: ADK stops at the first plugin callback that
// returns a result, so a plugin ahead of it (retryandreflect, say) would hide
// tool outcomes from the breaker and could leave a half-open probe waiting
// for its lease. Invalid configuration returns one error listing every
// problem.
func New(opts ...Option) (*adkplugin.Plugin, error) {
	h, name, err := build(opts)
	if err != nil {
		return nil, err
	}
	return FromHandler(h, name)
}

// MustNew is New that panics on error, for package-level variables and samples.
func MustNew(opts ...Option) *adkplugin.Plugin {
	p, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// FromHandler assembles a handler into an ADK plugin named name.
func FromHandler(h *callbacks.Handler, name string) (*adkplugin.Plugin, error) {
	if h == nil {
		return nil, errors.New("adkbreaker: nil handler")
	}
	if name == "" {
		name = DefaultName
	}
	return adkplugin.New(h.PluginConfig(name))
}
