package config

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/redact"
	"github.com/adkbreaker/adkbreaker/registry"
)

// File is the configuration file's schema.
type File struct {
	// Version is the schema version; it must be 1.
	Version int `json:"version" yaml:"version"`
	// Defaults apply to every dependency without its own setting.
	Defaults Defaults `json:"defaults" yaml:"defaults"`
	// Dependencies, by configured name (the dependency key shown to the model).
	Dependencies map[string]Dependency `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`
	// Models declares model failover chains, by chain name.
	Models map[string]ModelChain `json:"models,omitempty" yaml:"models,omitempty"`
	// Fleet shares trips and probes between replicas through Redis.
	Fleet *Fleet `json:"fleet,omitempty" yaml:"fleet,omitempty"`
	// MCPServers declares MCP servers, by name (their breaker key), for
	// mcpguard.FromConfig.
	MCPServers map[string]MCPServer `json:"mcp_servers,omitempty" yaml:"mcp_servers,omitempty"`
}

// Defaults are plugin-wide settings.
type Defaults struct {
	// ShortCircuitLimit is K (terminal guidance from the K-th short-circuit of
	// one dependency in an invocation). 0 means 2.
	ShortCircuitLimit int `json:"short_circuit_limit,omitempty" yaml:"short_circuit_limit,omitempty"`
	// TurnLimit is H (end the turn after H short-circuits). 0 means 5.
	TurnLimit int `json:"turn_limit,omitempty" yaml:"turn_limit,omitempty"`
	// MaxModelCalls is the turn budget in model calls per invocation: the
	// call after the MaxModelCalls-th is answered by the plugin with a final
	// answer. 0 means no limit.
	MaxModelCalls int `json:"max_model_calls,omitempty" yaml:"max_model_calls,omitempty"`
	// MaxTurnTokens is the turn budget in tokens per root turn, counted
	// from the usage metadata of every model response (sub-agents reached
	// through agent tools included): once spent, the next model call is
	// answered by the plugin with a final answer. 0 means no limit.
	MaxTurnTokens int `json:"max_turn_tokens,omitempty" yaml:"max_turn_tokens,omitempty"`
	// MaxTurnDuration is the turn budget in time per invocation, from the
	// start of the run: the first model call at or after it is answered by
	// the plugin with a final answer. 0 means no limit.
	MaxTurnDuration Duration `json:"max_turn_duration,omitempty" yaml:"max_turn_duration,omitempty"`
	// RepeatLimit is N of the repeated-call guard: within one turn, the N-th
	// call of a tool with the same arguments is answered with a note instead
	// of running, and the next ends the turn. 0 means 3; -1 turns the guard
	// off; otherwise at least 2.
	RepeatLimit int `json:"repeat_limit,omitempty" yaml:"repeat_limit,omitempty"`
	// ToolRepeatLimits sets RepeatLimit per tool name: -1 for a tool meant
	// to be called again with the same arguments (a polling tool).
	ToolRepeatLimits map[string]int `json:"tool_repeat_limits,omitempty" yaml:"tool_repeat_limits,omitempty"`
	// RemoveUnavailable removes unavailable tools' declarations instead of
	// marking them.
	RemoveUnavailable bool `json:"remove_unavailable,omitempty" yaml:"remove_unavailable,omitempty"`
	// ToolNote adds the standing note (degrade.ToolNote) to every protected
	// tool's description in each model request (breaker.WithToolNote).
	ToolNote bool `json:"tool_note,omitempty" yaml:"tool_note,omitempty"`
	// UnmappedTools is "protect" (default: a breaker per tool name) or
	// "pass_through".
	UnmappedTools string `json:"unmapped_tools,omitempty" yaml:"unmapped_tools,omitempty"`
	// MaxBreakers caps the registry. 0 means registry.DefaultMaxBreakers
	// (1024). It must be at least the number of dependencies.
	MaxBreakers int `json:"max_breakers,omitempty" yaml:"max_breakers,omitempty"`
	// Policy is the default breaker policy.
	Policy Policy `json:"policy" yaml:"policy"`
}

// Dependency is one backend.
type Dependency struct {
	// Tools are tool names or path.Match patterns that call this backend.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	// Alternatives are tools offered to the model while this one is down.
	Alternatives []string `json:"alternatives,omitempty" yaml:"alternatives,omitempty"`
	// CacheLastGood offers the last good result (with its age) while down.
	CacheLastGood bool `json:"cache_last_good,omitempty" yaml:"cache_last_good,omitempty"`
	// RepeatLimit is the repeated-call guard's N for this dependency's
	// tools (see Defaults.RepeatLimit): 0 inherits, -1 turns it off.
	RepeatLimit int `json:"repeat_limit,omitempty" yaml:"repeat_limit,omitempty"`
	// Policy overrides Defaults.Policy field by field (unset fields inherit).
	Policy *Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
}

// Policy mirrors registry.Policy with durations written as strings ("30s",
// "1m30s") or numbers of seconds. Zero or absent fields inherit: from
// Defaults.Policy in a dependency's policy, from the registry defaults in
// Defaults.Policy. The switches are pointers so that a dependency can turn
// off what the defaults turn on (no_jitter: false).
type Policy struct {
	ConsecutiveFailures        int      `json:"consecutive_failures,omitempty" yaml:"consecutive_failures,omitempty"`
	FailureRate                float64  `json:"failure_rate,omitempty" yaml:"failure_rate,omitempty"`
	MinCalls                   int      `json:"min_calls,omitempty" yaml:"min_calls,omitempty"`
	Window                     Duration `json:"window,omitempty" yaml:"window,omitempty"`
	DisableFailureRate         *bool    `json:"disable_failure_rate,omitempty" yaml:"disable_failure_rate,omitempty"`
	SlowCall                   Duration `json:"slow_call,omitempty" yaml:"slow_call,omitempty"`
	OpenFor                    Duration `json:"open_for,omitempty" yaml:"open_for,omitempty"`
	OpenBackoff                float64  `json:"open_backoff,omitempty" yaml:"open_backoff,omitempty"`
	MaxOpenFor                 Duration `json:"max_open_for,omitempty" yaml:"max_open_for,omitempty"`
	OpenJitter                 float64  `json:"open_jitter,omitempty" yaml:"open_jitter,omitempty"`
	NoJitter                   *bool    `json:"no_jitter,omitempty" yaml:"no_jitter,omitempty"`
	HalfOpenProbes             int      `json:"half_open_probes,omitempty" yaml:"half_open_probes,omitempty"`
	ProbeLease                 Duration `json:"probe_lease,omitempty" yaml:"probe_lease,omitempty"`
	MaxRetryHint               Duration `json:"max_retry_hint,omitempty" yaml:"max_retry_hint,omitempty"`
	Shadow                     *bool    `json:"shadow,omitempty" yaml:"shadow,omitempty"`
	NoTripOnRetryHint          *bool    `json:"no_trip_on_retry_hint,omitempty" yaml:"no_trip_on_retry_hint,omitempty"`
	TripOnRetryHint            *bool    `json:"trip_on_retry_hint,omitempty" yaml:"trip_on_retry_hint,omitempty"`
	RetryHintFailures          int      `json:"retry_hint_failures,omitempty" yaml:"retry_hint_failures,omitempty"`
	CallTimeout                Duration `json:"call_timeout,omitempty" yaml:"call_timeout,omitempty"`
	DisableConsecutiveFailures *bool    `json:"disable_consecutive_failures,omitempty" yaml:"disable_consecutive_failures,omitempty"`
	CountWindow                int      `json:"count_window,omitempty" yaml:"count_window,omitempty"`
	SlowInFlight               Duration `json:"slow_in_flight,omitempty" yaml:"slow_in_flight,omitempty"`
	SlowInFlightFactor         float64  `json:"slow_in_flight_factor,omitempty" yaml:"slow_in_flight_factor,omitempty"`
	SlowInFlightCalls          int      `json:"slow_in_flight_calls,omitempty" yaml:"slow_in_flight_calls,omitempty"`
	DisableSlowInFlight        *bool    `json:"disable_slow_in_flight,omitempty" yaml:"disable_slow_in_flight,omitempty"`
	MaxConcurrent              int      `json:"max_concurrent,omitempty" yaml:"max_concurrent,omitempty"`
	QueueWait                  Duration `json:"queue_wait,omitempty" yaml:"queue_wait,omitempty"`
}

// ModelChain is an ordered list of model endpoints; the first is the primary.
type ModelChain struct {
	Endpoints []ModelEndpoint `json:"endpoints" yaml:"endpoints"`
}

// ModelEndpoint is one model endpoint of a chain.
type ModelEndpoint struct {
	// Model is the model name, e.g. "gemini-2.5-pro".
	Model string `json:"model" yaml:"model"`
	// Backend is "gemini_api", "vertex_ai" or "openai" (the OpenAI
	// Responses API, /v1/responses, or a server that implements it; ADK Go
	// v2 only).
	Backend string `json:"backend" yaml:"backend"`
	// Location is the Vertex AI region (vertex_ai only).
	Location string `json:"location,omitempty" yaml:"location,omitempty"`
	// Project is the Vertex AI project (vertex_ai only; else from the environment).
	Project string `json:"project,omitempty" yaml:"project,omitempty"`
	// BaseURL overrides the API endpoint.
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	// Timeout bounds one call to this endpoint (0: none of ours).
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// FirstOutputTimeout bounds the wait for the endpoint's first content
	// part, or its unary answer; past it the call is a stall
	// (failover.Endpoint.FirstOutputTimeout). 0: failover's default;
	// negative: off.
	FirstOutputTimeout Duration `json:"first_output_timeout,omitempty" yaml:"first_output_timeout,omitempty"`
	// IdleTimeout bounds the wait between two content parts of a stream
	// (failover.Endpoint.IdleTimeout). 0: failover's default; negative: off.
	IdleTimeout Duration `json:"idle_timeout,omitempty" yaml:"idle_timeout,omitempty"`
	// Policy is this endpoint's breaker policy; zero fields inherit
	// failover.DefaultPolicy() (not Defaults.Policy, which is tuned for tools).
	Policy *Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
	// Throttle, if present, turns on client-side adaptive throttling of
	// this endpoint (failover.Throttle); zero fields mean its defaults.
	Throttle *Throttle `json:"throttle,omitempty" yaml:"throttle,omitempty"`
}

// Throttle mirrors failover.Throttle: client-side adaptive throttling of a
// model endpoint. Zero fields mean failover's defaults.
type Throttle struct {
	K                    float64  `json:"k,omitempty" yaml:"k,omitempty"`
	Window               Duration `json:"window,omitempty" yaml:"window,omitempty"`
	MaxRejectProbability float64  `json:"max_reject_probability,omitempty" yaml:"max_reject_probability,omitempty"`
}

// Format is a file format.
type Format int

const (
	// YAML is YAML 1.2 (JSON is valid YAML, but use JSON for strict JSON).
	YAML Format = iota
	// JSON is JSON.
	JSON
)

// String returns "YAML" or "JSON".
func (f Format) String() string {
	switch f {
	case YAML:
		return "YAML"
	case JSON:
		return "JSON"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 1 << 20

// maxMappingKeys bounds the keys of one YAML mapping: yaml.v3 checks keys
// for duplicates in quadratic time (100,000 keys take half a minute).
const maxMappingKeys = 10_000

// FormatOf returns the format of a file from its extension (.yaml, .yml or
// .json, in any case).
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return YAML, nil
	case ".json":
		return JSON, nil
	}
	return 0, fmt.Errorf("config %s: unknown extension %q (want .yaml, .yml or .json)", path, filepath.Ext(path))
}

// Load reads and validates a configuration file; the format comes from the
// extension (.yaml, .yml or .json). An invalid file returns an *Error naming
// the file and listing every problem.
func Load(path string) (*File, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer fh.Close()
	// Read at most one byte more than the limit: a huge file (or a device)
	// is refused without reading it all.
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b, format)
	if err != nil {
		e := *asError(err)
		e.File = path
		return nil, &e
	}
	return c, nil
}

// Parse decodes and validates configuration. Unknown fields, duplicate keys
// and values of the wrong type are errors. An invalid configuration returns
// an *Error listing every problem, each named by its field path and, where
// known, its line.
func Parse(data []byte, format Format) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{Problems: []Problem{{Message: fmt.Sprintf("the file is larger than the limit of %d bytes", MaxFileBytes)}}}
	}
	var d decoded
	switch format {
	case YAML:
		d = decodeYAML(data)
	case JSON:
		d = decodeJSON(data)
	default:
		return nil, fmt.Errorf("config: unknown format %d", int(format))
	}
	ps := d.problems
	if !d.fatal {
		covered := d.coverage()
		for _, p := range d.file.validate() {
			if !covered(p.Path) {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) == 0 {
		return d.file, nil
	}
	d.pos.locate(ps)
	return nil, &Error{Problems: ps}
}

// decoded is the outcome of decoding, before validation.
type decoded struct {
	file     *File
	problems []Problem
	// fatal: file is incomplete in ways validation cannot tell apart from
	// real problems (a syntax error, a value of the wrong type at the top).
	fatal bool
	// scopes are paths whose values were not decoded; validation problems
	// under them are consequences, not news.
	scopes []string
	pos    positions
}

// coverage returns whether a path is in or under a scope.
func (d *decoded) coverage() func(path string) bool {
	set := make(map[string]bool, len(d.scopes))
	for _, s := range d.scopes {
		set[s] = true
	}
	return func(path string) bool {
		if len(set) == 0 {
			return false
		}
		for p := path; ; p = parent(p) {
			if set[p] {
				return true
			}
			if p == "" {
				return false
			}
		}
	}
}

// Validate reports every problem at once, each named by its field path, as
// an *Error; nil if the configuration is valid.
func (c *File) Validate() error {
	return problems(c.validate()).err()
}

func (c *File) validate() problems {
	var ps problems
	switch {
	case c.Version == 0:
		ps.add("version", "required; must be 1")
	case c.Version != 1:
		ps.add("version", "must be 1, got %d", c.Version)
	}
	d := c.Defaults
	if d.ShortCircuitLimit < 0 {
		ps.add("defaults.short_circuit_limit", "must be ≥ 0, got %d", d.ShortCircuitLimit)
	}
	if d.TurnLimit < 0 {
		ps.add("defaults.turn_limit", "must be ≥ 0, got %d", d.TurnLimit)
	}
	if d.MaxModelCalls < 0 {
		ps.add("defaults.max_model_calls", "must be ≥ 0, got %d", d.MaxModelCalls)
	}
	if d.MaxTurnTokens < 0 {
		ps.add("defaults.max_turn_tokens", "must be ≥ 0, got %d", d.MaxTurnTokens)
	}
	if d.MaxTurnDuration < 0 {
		ps.add("defaults.max_turn_duration", "must be ≥ 0, got %s", d.MaxTurnDuration)
	}
	ps = c.validateRepeatLimits(ps) // repeat.go
	switch {
	case d.MaxBreakers < 0 || d.MaxBreakers > registry.MaxBreakersLimit:
		ps.add("defaults.max_breakers", "must be in [0, %d], got %d", registry.MaxBreakersLimit, d.MaxBreakers)
	case d.MaxBreakers == 0 && len(c.Dependencies) > registry.DefaultMaxBreakers:
		ps.add("defaults.max_breakers", "%d dependencies are configured but the default cap is %d; set max_breakers to at least %[1]d", len(c.Dependencies), registry.DefaultMaxBreakers)
	case d.MaxBreakers > 0 && d.MaxBreakers < len(c.Dependencies):
		ps.add("defaults.max_breakers", "must be at least the number of dependencies (%d), got %d", len(c.Dependencies), d.MaxBreakers)
	}
	switch d.UnmappedTools {
	case "", "protect", "pass_through":
	default:
		ps.add("defaults.unmapped_tools", "must be \"protect\" or \"pass_through\", got %s", refusedChoice(d.UnmappedTools, []string{"protect", "pass_through"}))
	}
	defErrs := splitErrs("defaults.policy", d.Policy.Registry().Validate())
	ps = append(ps, defErrs...)
	ps = c.validateDependencies(ps, len(defErrs) == 0)
	ps = append(ps, c.validateModels()...)
	ps = append(ps, c.validateFleet()...)
	ps = append(ps, c.validateMCP(len(defErrs) == 0)...) // mcp.go
	return ps
}

// toolRef is where a tool name or pattern is mapped.
type toolRef struct {
	dep string
	i   int
}

func (c *File) validateDependencies(ps problems, defaultsValid bool) problems {
	names := slices.Sorted(maps.Keys(c.Dependencies))
	exact := map[string]toolRef{}
	var patterns []struct {
		glob string
		ref  toolRef
	}
	seen := map[string]toolRef{}
	for _, name := range names {
		dep := c.Dependencies[name]
		p := "dependencies." + depSeg(name)
		if err := degrade.CheckName(name); err != nil {
			ps.add(p, "invalid dependency name: %v", err)
		} else if !validName(name) {
			ps.add(p, "invalid dependency name %s: use 1–%d bytes of printable text without spaces", quoteShort(name, 40), registry.MaxKeyLen)
		}
		for i, t := range dep.Tools {
			tp := index(p+".tools", i)
			switch {
			case strings.TrimSpace(t) == "":
				ps.add(tp, "empty tool name")
				continue
			case strings.TrimSpace(t) != t:
				ps.add(tp, "%q has leading or trailing spaces", t)
				continue
			}
			if _, err := path.Match(t, ""); err != nil {
				ps.add(tp, "invalid pattern %s: %v (patterns use Go's path.Match syntax: *, ?, [a-z])", quoteShort(t, 60), err)
				continue
			}
			if prev, dup := seen[t]; dup {
				if prev.dep == name {
					ps.add(tp, "%q is listed twice (also tools[%d])", t, prev.i)
				} else {
					ps.add(tp, "%q is also mapped to dependency %s (dependencies.%s.tools[%d]); a tool belongs to one dependency", t, depQuote(prev.dep), depSeg(prev.dep), prev.i)
				}
				continue
			}
			ref := toolRef{name, i}
			seen[t] = ref
			if isPattern(t) {
				patterns = append(patterns, struct {
					glob string
					ref  toolRef
				}{t, ref})
			} else {
				exact[t] = ref
			}
		}
		if dep.Policy != nil {
			ps = append(ps, c.dependencyPolicyProblems(name, p+".policy", defaultsValid)...)
		}
	}
	// owner mirrors how the plugin resolves a tool: an exact name first, then
	// the first matching pattern in dependency-name order. The pattern scan
	// has a budget, so a pathological file (100,000 patterns and as many
	// alternatives) cannot make validation quadratic; past it, only exact
	// names are checked.
	budget := 1 << 20
	owner := func(tool string) (toolRef, bool) {
		if r, ok := exact[tool]; ok {
			return r, true
		}
		for _, pt := range patterns {
			if budget--; budget < 0 {
				break
			}
			if ok, _ := path.Match(pt.glob, tool); ok {
				return pt.ref, true
			}
		}
		return toolRef{}, false
	}
	for _, name := range names {
		p := "dependencies." + depSeg(name)
		for i, a := range c.Dependencies[name].Alternatives {
			ap := index(p+".alternatives", i)
			if strings.TrimSpace(a) == "" {
				ps.add(ap, "empty tool name")
				continue
			}
			if r, ok := owner(a); ok && r.dep == name {
				ps.add(ap, "%q is a tool of this dependency (it matches tools[%d]), so it is unavailable too; name a tool of another backend", a, r.i)
			}
		}
	}
	return ps
}

// dependencyPolicyProblems validates a dependency's policy as the registry
// will see it: merged over defaults.policy. A problem the override has on
// its own is reported as is; one that only the merge has (a cross-field rule
// such as max_open_for ≥ open_for, met by one of the two policies alone) says
// that inherited fields are involved. The override alone is not enough: a
// zero field means "inherit", not the registry default it would mean alone.
func (c *File) dependencyPolicyProblems(name, path string, defaultsValid bool) []Problem {
	own := splitErrs(path, c.ownPolicy(name).Registry().Validate())
	if !defaultsValid {
		// defaults.policy is reported already; the override alone is the best
		// judge left.
		return own
	}
	merged := splitErrs(path, c.PolicyFor(name).Validate())
	for i, m := range merged {
		if !slices.Contains(own, m) {
			merged[i].Message += " (with fields inherited from defaults.policy)"
		}
	}
	return merged
}

// depSeg is seg for a dependency name, except that a name holding a
// credential is never repeated: it becomes "[redacted]".
func depSeg(name string) string {
	if redact.Sensitive(name) {
		return redact.Redacted
	}
	return seg(name)
}

// depQuote is a dependency name quoted, or "[redacted]" if it holds a
// credential.
func depQuote(name string) string {
	if redact.Sensitive(name) {
		return redact.Redacted
	}
	return strconv.Quote(name)
}

// validName reports whether a dependency name is a valid registry key made
// of printable runes without spaces.
func validName(name string) bool {
	if !registry.Key(name).Valid() {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || r == ' ' {
			return false
		}
	}
	return true
}

// isPattern reports whether a tool name is a path.Match pattern (the plugin's
// rule).
func isPattern(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Registry converts p to a registry.Policy (an unset switch is false).
func (p Policy) Registry() registry.Policy {
	return registry.Policy{
		ConsecutiveFailures: p.ConsecutiveFailures, FailureRate: p.FailureRate, MinCalls: p.MinCalls,
		Window: time.Duration(p.Window), DisableFailureRate: isTrue(p.DisableFailureRate), SlowCall: time.Duration(p.SlowCall),
		OpenFor: time.Duration(p.OpenFor), OpenBackoff: p.OpenBackoff, MaxOpenFor: time.Duration(p.MaxOpenFor),
		OpenJitter: p.OpenJitter, NoJitter: isTrue(p.NoJitter), HalfOpenProbes: p.HalfOpenProbes,
		ProbeLease: time.Duration(p.ProbeLease), MaxRetryHint: time.Duration(p.MaxRetryHint),
		Shadow: isTrue(p.Shadow), NoTripOnRetryHint: isTrue(p.NoTripOnRetryHint),
		TripOnRetryHint: copyBool(p.TripOnRetryHint), RetryHintFailures: p.RetryHintFailures,
		CallTimeout: time.Duration(p.CallTimeout), DisableConsecutiveFailures: isTrue(p.DisableConsecutiveFailures),
		CountWindow: p.CountWindow, SlowInFlight: time.Duration(p.SlowInFlight), SlowInFlightFactor: p.SlowInFlightFactor,
		SlowInFlightCalls: p.SlowInFlightCalls, DisableSlowInFlight: isTrue(p.DisableSlowInFlight),
		MaxConcurrent: p.MaxConcurrent, QueueWait: time.Duration(p.QueueWait),
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Merge returns base with every non-zero field of over applied. The switches
// (DisableFailureRate, NoJitter, DisableConsecutiveFailures,
// DisableSlowInFlight) are on if either has them on: a
// registry.Policy cannot say "explicitly off". Policy.Apply can.
func Merge(base, over registry.Policy) registry.Policy {
	setI := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setF := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	setD := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	setI(&base.ConsecutiveFailures, over.ConsecutiveFailures)
	setF(&base.FailureRate, over.FailureRate)
	setI(&base.MinCalls, over.MinCalls)
	setD(&base.Window, over.Window)
	base.DisableFailureRate = base.DisableFailureRate || over.DisableFailureRate
	setD(&base.SlowCall, over.SlowCall)
	setD(&base.OpenFor, over.OpenFor)
	setF(&base.OpenBackoff, over.OpenBackoff)
	setD(&base.MaxOpenFor, over.MaxOpenFor)
	setF(&base.OpenJitter, over.OpenJitter)
	base.NoJitter = base.NoJitter || over.NoJitter
	base.Shadow = base.Shadow || over.Shadow
	setI(&base.HalfOpenProbes, over.HalfOpenProbes)
	setD(&base.ProbeLease, over.ProbeLease)
	setD(&base.MaxRetryHint, over.MaxRetryHint)
	base.NoTripOnRetryHint = base.NoTripOnRetryHint || over.NoTripOnRetryHint
	if over.TripOnRetryHint != nil { // a pointer says "explicitly off"
		base.TripOnRetryHint = copyBool(over.TripOnRetryHint)
	}
	setI(&base.RetryHintFailures, over.RetryHintFailures)
	setD(&base.CallTimeout, over.CallTimeout)
	base.DisableConsecutiveFailures = base.DisableConsecutiveFailures || over.DisableConsecutiveFailures
	setI(&base.CountWindow, over.CountWindow)
	setD(&base.SlowInFlight, over.SlowInFlight)
	setF(&base.SlowInFlightFactor, over.SlowInFlightFactor)
	setI(&base.SlowInFlightCalls, over.SlowInFlightCalls)
	base.DisableSlowInFlight = base.DisableSlowInFlight || over.DisableSlowInFlight
	setI(&base.MaxConcurrent, over.MaxConcurrent)
	setD(&base.QueueWait, over.QueueWait)
	return base
}

// PolicyFor returns the effective policy of a dependency (or MCP server):
// the default policy with its own fields applied. Fields still zero mean the
// registry defaults (registry.Policy.WithDefaults).
func (c *File) PolicyFor(name string) registry.Policy {
	p := c.Defaults.Policy.Registry()
	if own := c.ownPolicy(name); own != nil {
		p = own.Apply(p)
	}
	return p
}

// Apply returns base with the fields p sets applied: non-zero numbers and
// durations, and the switches written in the file, false included (so
// no_jitter: false turns off a no_jitter inherited from base). Unlike Merge,
// it can turn a switch off.
func (p Policy) Apply(base registry.Policy) registry.Policy {
	out := Merge(base, p.Registry())
	if p.DisableFailureRate != nil {
		out.DisableFailureRate = *p.DisableFailureRate
	}
	if p.Shadow != nil {
		out.Shadow = *p.Shadow
	}
	if p.NoJitter != nil {
		out.NoJitter = *p.NoJitter
	}
	if p.NoTripOnRetryHint != nil {
		out.NoTripOnRetryHint = *p.NoTripOnRetryHint
		if *p.NoTripOnRetryHint && p.TripOnRetryHint == nil {
			out.TripOnRetryHint = nil // the older spelling decides
		}
		// no_trip_on_retry_hint: false (its default) only clears an
		// inherited true: it does not turn tripping on (trip_on_retry_hint:
		// true does), and leaves an inherited trip_on_retry_hint as it is.
	}
	if p.TripOnRetryHint != nil && p.NoTripOnRetryHint == nil {
		// The file's word wins over an inherited older spelling (both in one
		// policy are for Validate to refuse if they disagree).
		out.NoTripOnRetryHint = !*p.TripOnRetryHint
	}
	if p.DisableConsecutiveFailures != nil {
		out.DisableConsecutiveFailures = *p.DisableConsecutiveFailures
	}
	if p.DisableSlowInFlight != nil {
		out.DisableSlowInFlight = *p.DisableSlowInFlight
	}
	return out
}

// RegistryOptions returns the registry options the file describes: the
// default policy, the cap and the effective policy of every dependency and
// MCP server that has a policy of its own. The registry also records the
// file (registry.WithSource), so that a plugin sharing it
// (breaker.WithRegistry) and not given the file (breaker.WithConfig) is an
// error rather than a plugin that silently ignores the file's tools.
func (c *File) RegistryOptions() []registry.Option {
	opts := []registry.Option{registry.WithDefaultPolicy(c.Defaults.Policy.Registry()), registry.WithSource(c)}
	if c.Defaults.MaxBreakers > 0 {
		opts = append(opts, registry.WithMaxBreakers(c.Defaults.MaxBreakers))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Dependencies)) {
		if c.Dependencies[name].Policy != nil {
			opts = append(opts, registry.WithPolicy(registry.Key(name), c.PolicyFor(name)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) { // mcp.go
		if c.MCPServers[name].Policy != nil && c.Dependencies[name].Policy == nil {
			opts = append(opts, registry.WithPolicy(registry.Key(name), c.PolicyFor(name)))
		}
	}
	return opts
}
