// Package config loads adkbreaker configuration from a YAML or JSON file:
// dependencies, the tools mapped to them, their breaker policies and the
// per-invocation limits. Decoding is strict (unknown fields are errors) and
// every validation problem is reported at once, named by its field path.
//
//	version: 1
//	defaults:
//	  short_circuit_limit: 2
//	  turn_limit: 5
//	  policy:
//	    consecutive_failures: 5
//	    open_for: 30s
//	dependencies:
//	  billing-api:
//	    tools: [get_invoice, "billing_*"]
//	    alternatives: [search_cached_invoices]
//	    policy:
//	      consecutive_failures: 3
//	      open_for: 1m
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/adkbreaker/adkbreaker/registry"
)

// File is the configuration file's schema.
type File struct {
	// Version is the schema version; it must be 1.
	Version int `json:"version" yaml:"version"`
	// Defaults apply to every dependency without its own setting.
	Defaults Defaults `json:"defaults" yaml:"defaults"`
	// Dependencies, by configured name (the dependency key shown to the model).
	Dependencies map[string]Dependency `json:"dependencies" yaml:"dependencies"`
	// Models declares model failover chains (see package failover).
	Models map[string]ModelChain `json:"models,omitempty" yaml:"models,omitempty"`
}

// Defaults are plugin-wide settings.
type Defaults struct {
	// ShortCircuitLimit is K (terminal guidance from the K-th short-circuit of
	// one dependency in an invocation). 0 means 2.
	ShortCircuitLimit int `json:"short_circuit_limit,omitempty" yaml:"short_circuit_limit,omitempty"`
	// TurnLimit is H (end the turn after H short-circuits). 0 means 5.
	TurnLimit int `json:"turn_limit,omitempty" yaml:"turn_limit,omitempty"`
	// RemoveUnavailable removes unavailable tools' declarations instead of
	// marking them.
	RemoveUnavailable bool `json:"remove_unavailable,omitempty" yaml:"remove_unavailable,omitempty"`
	// UnmappedTools is "protect" (default: a breaker per tool name) or
	// "pass_through".
	UnmappedTools string `json:"unmapped_tools,omitempty" yaml:"unmapped_tools,omitempty"`
	// MaxBreakers caps the registry. 0 means 1024.
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
	// Policy overrides Defaults.Policy field by field (unset fields inherit).
	Policy *Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
}

// Policy mirrors registry.Policy with durations written as strings ("30s",
// "1m30s") or numbers of seconds. Zero or absent fields inherit.
type Policy struct {
	ConsecutiveFailures int      `json:"consecutive_failures,omitempty" yaml:"consecutive_failures,omitempty"`
	FailureRate         float64  `json:"failure_rate,omitempty" yaml:"failure_rate,omitempty"`
	MinCalls            int      `json:"min_calls,omitempty" yaml:"min_calls,omitempty"`
	Window              Duration `json:"window,omitempty" yaml:"window,omitempty"`
	DisableFailureRate  bool     `json:"disable_failure_rate,omitempty" yaml:"disable_failure_rate,omitempty"`
	SlowCall            Duration `json:"slow_call,omitempty" yaml:"slow_call,omitempty"`
	OpenFor             Duration `json:"open_for,omitempty" yaml:"open_for,omitempty"`
	OpenBackoff         float64  `json:"open_backoff,omitempty" yaml:"open_backoff,omitempty"`
	MaxOpenFor          Duration `json:"max_open_for,omitempty" yaml:"max_open_for,omitempty"`
	OpenJitter          float64  `json:"open_jitter,omitempty" yaml:"open_jitter,omitempty"`
	NoJitter            bool     `json:"no_jitter,omitempty" yaml:"no_jitter,omitempty"`
	HalfOpenProbes      int      `json:"half_open_probes,omitempty" yaml:"half_open_probes,omitempty"`
	ProbeLease          Duration `json:"probe_lease,omitempty" yaml:"probe_lease,omitempty"`
	MaxRetryHint        Duration `json:"max_retry_hint,omitempty" yaml:"max_retry_hint,omitempty"`
}

// ModelChain is an ordered list of model endpoints; the first is the primary.
type ModelChain struct {
	Endpoints []ModelEndpoint `json:"endpoints" yaml:"endpoints"`
}

// ModelEndpoint is one model endpoint of a chain.
type ModelEndpoint struct {
	// Model is the model name, e.g. "gemini-2.5-pro".
	Model string `json:"model" yaml:"model"`
	// Backend is "gemini_api" or "vertex_ai".
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
	// Policy overrides the model default policy.
	Policy *Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
}

// Duration is a time.Duration that decodes from "30s"-style strings or from
// a number of seconds.
type Duration time.Duration

// UnmarshalJSON accepts "1m30s" or 90 (seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return d.parse(s)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\" or a number of seconds, got %s", b)
	}
	return d.seconds(f)
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalYAML accepts "1m30s" or 90 (seconds).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration: want a scalar", n.Line)
	}
	if n.Tag == "!!int" || n.Tag == "!!float" {
		var f float64
		if err := n.Decode(&f); err != nil {
			return err
		}
		return d.seconds(f)
	}
	return d.parse(n.Value)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration: %q: want a value like \"30s\" or \"1m30s\"", s)
	}
	*d = Duration(v)
	return nil
}

func (d *Duration) seconds(f float64) error {
	if f != f || f > float64(1<<62)/float64(time.Second) || f < -float64(1<<62)/float64(time.Second) {
		return fmt.Errorf("duration: %v seconds out of range", f)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// Format is a file format.
type Format int

const (
	// YAML is YAML 1.2 (JSON is valid YAML, but use JSON for strict JSON).
	YAML Format = iota
	// JSON is JSON.
	JSON
)

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 1 << 20

// Load reads and validates a configuration file; the format comes from the
// extension (.yaml, .yml or .json).
func Load(path string) (*File, error) {
	var f Format
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		f = YAML
	case ".json":
		f = JSON
	default:
		return nil, fmt.Errorf("config %s: unknown extension (want .yaml, .yml or .json)", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b, f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates configuration. Unknown fields are errors.
func Parse(data []byte, format Format) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("file is %d bytes; the limit is %d", len(data), MaxFileBytes)
	}
	var c File
	switch format {
	case JSON:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("decode: %w", jsonErr(err))
		}
		if dec.More() {
			return nil, errors.New("decode: trailing data after the JSON object")
		}
	case YAML:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown format %d", format)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func jsonErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

// Validate reports every problem at once, each named by its field path.
func (c *File) Validate() error {
	var errs []error
	if c.Version != 1 {
		errs = append(errs, fmt.Errorf("version: must be 1, got %d", c.Version))
	}
	d := c.Defaults
	if d.ShortCircuitLimit < 0 {
		errs = append(errs, fmt.Errorf("defaults.short_circuit_limit: must be ≥ 0, got %d", d.ShortCircuitLimit))
	}
	if d.TurnLimit < 0 {
		errs = append(errs, fmt.Errorf("defaults.turn_limit: must be ≥ 0, got %d", d.TurnLimit))
	}
	if d.MaxBreakers < 0 {
		errs = append(errs, fmt.Errorf("defaults.max_breakers: must be ≥ 0, got %d", d.MaxBreakers))
	}
	switch d.UnmappedTools {
	case "", "protect", "pass_through":
	default:
		errs = append(errs, fmt.Errorf("defaults.unmapped_tools: must be \"protect\" or \"pass_through\", got %q", d.UnmappedTools))
	}
	errs = appendPolicyErrs(errs, "defaults.policy", d.Policy.Registry())
	seen := map[string]string{}
	for _, name := range sortedKeys(c.Dependencies) {
		dep := c.Dependencies[name]
		p := "dependencies." + name
		if !registry.Key(name).Valid() || strings.ContainsAny(name, " \t") {
			errs = append(errs, fmt.Errorf("%s: invalid dependency name (1–%d printable bytes, no spaces)", p, registry.MaxKeyLen))
		}
		for i, t := range dep.Tools {
			if strings.TrimSpace(t) == "" {
				errs = append(errs, fmt.Errorf("%s.tools[%d]: empty", p, i))
				continue
			}
			if prev, ok := seen[t]; ok {
				errs = append(errs, fmt.Errorf("%s.tools[%d]: %q is also mapped to %q", p, i, t, prev))
				continue
			}
			seen[t] = name
		}
		if dep.Policy != nil {
			errs = append(errs, policyErrs(p+".policy", c.PolicyFor(name))...)
		}
	}
	errs = append(errs, c.validateModels()...)
	return errors.Join(errs...)
}

func appendPolicyErrs(errs []error, prefix string, p registry.Policy) []error {
	return append(errs, policyErrs(prefix, p)...)
}

func policyErrs(prefix string, p registry.Policy) []error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, fmt.Errorf("%s.%w", prefix, e))
		}
		return out
	}
	return []error{fmt.Errorf("%s.%w", prefix, err)}
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Registry converts p to a registry.Policy.
func (p Policy) Registry() registry.Policy {
	return registry.Policy{
		ConsecutiveFailures: p.ConsecutiveFailures, FailureRate: p.FailureRate, MinCalls: p.MinCalls,
		Window: time.Duration(p.Window), DisableFailureRate: p.DisableFailureRate, SlowCall: time.Duration(p.SlowCall),
		OpenFor: time.Duration(p.OpenFor), OpenBackoff: p.OpenBackoff, MaxOpenFor: time.Duration(p.MaxOpenFor),
		OpenJitter: p.OpenJitter, NoJitter: p.NoJitter, HalfOpenProbes: p.HalfOpenProbes,
		ProbeLease: time.Duration(p.ProbeLease), MaxRetryHint: time.Duration(p.MaxRetryHint),
	}
}

// Merge returns base with every non-zero field of over applied.
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
	setI(&base.HalfOpenProbes, over.HalfOpenProbes)
	setD(&base.ProbeLease, over.ProbeLease)
	setD(&base.MaxRetryHint, over.MaxRetryHint)
	return base
}

// PolicyFor returns the effective policy of a dependency: the default policy
// with the dependency's own fields applied.
func (c *File) PolicyFor(name string) registry.Policy {
	p := c.Defaults.Policy.Registry()
	if d, ok := c.Dependencies[name]; ok && d.Policy != nil {
		p = Merge(p, d.Policy.Registry())
	}
	return p
}

// RegistryOptions returns the registry options the file describes.
func (c *File) RegistryOptions() []registry.Option {
	opts := []registry.Option{registry.WithDefaultPolicy(c.Defaults.Policy.Registry())}
	if c.Defaults.MaxBreakers > 0 {
		opts = append(opts, registry.WithMaxBreakers(c.Defaults.MaxBreakers))
	}
	for name, d := range c.Dependencies {
		if d.Policy != nil {
			opts = append(opts, registry.WithPolicy(registry.Key(name), c.PolicyFor(name)))
		}
	}
	return opts
}

func sortedKeys[V any](m map[string]V) []string {
	k := mapKeys(m)
	slices.Sort(k)
	return k
}
