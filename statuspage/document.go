package statuspage

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Schema names the version of the status document. A change that removes or
// renames a field, or changes its meaning, gets a new version.
const Schema = "adkbreaker.status/v1"

// Document is the status document served at /status.json and pushed on
// /events. Its JSON field names are API (see docs/dashboards.md).
type Document struct {
	Schema string `json:"schema"`
	// GeneratedAt is the registry clock's time when the document was built.
	GeneratedAt time.Time `json:"generated_at"`
	// Health is "pass" when every dependency is closed, else "warn"
	// (degraded). It is never "fail": see the health endpoint.
	Health string `json:"health"`
	// Dependencies, sorted by name.
	Dependencies []Dependency `json:"dependencies"`
	// Transitions are the most recent ones, oldest first.
	Transitions []Transition `json:"transitions"`
	// DroppedTransitions counts transitions the registry could not deliver
	// (its notification queue was full); the timeline has gaps then.
	DroppedTransitions uint64 `json:"dropped_transitions"`
	// Actions says whether operator actions are enabled.
	Actions ActionsInfo `json:"actions"`
	// Fleet is this replica's fleet sharing (WithFleet); absent without it.
	Fleet *Fleet `json:"fleet,omitempty"`
	// Cost is what the agent's turns cost in tokens over the last hour
	// (WithTurnCosts); absent without it.
	Cost *Cost `json:"cost,omitempty"`
}

// Dependency is one breaker's state.
type Dependency struct {
	Name  string `json:"name"`
	State string `json:"state"` // closed, half_open, open
	// ProbeDue is true for an open breaker whose hold is over: the next call
	// is admitted as its probe (RetryAfterSeconds is 0). It stays open, as
	// Since and the transitions say, until that call comes.
	ProbeDue bool `json:"probe_due,omitempty"`
	Isolated bool `json:"isolated"`
	// Mode is "enforce", or "shadow" for a breaker in shadow mode
	// (registry.Policy.Shadow), which admits the calls it would refuse and
	// counts them in Counts.ShadowRefusals.
	Mode string `json:"mode"`
	// Since is when the state last changed; InStateSeconds is the time since.
	Since          time.Time `json:"since"`
	InStateSeconds float64   `json:"in_state_seconds"`
	// RetryAfterSeconds is the time until the breaker next admits a probe;
	// 0 when closed or when a probe may go now; -1 while isolated (it admits
	// nothing until an operator resets it: there is no retry time).
	RetryAfterSeconds float64 `json:"retry_after_seconds"`
	// FailureRate is failures / (successes + failures) in the current window
	// (closed) or probe round (half-open); null when nothing was counted.
	FailureRate *float64 `json:"failure_rate"`
	// FailureRateThreshold is the policy's trip rate; 0 when the rate gate
	// is off.
	FailureRateThreshold float64 `json:"failure_rate_threshold"`
	Counts               Counts  `json:"counts"`
	// Cause is what opened the breaker (trip, probe_failed, retry_hint,
	// isolated, …) while it is open or half-open; absent while closed.
	Cause string `json:"cause,omitempty"`
	// CreatedAt is when the breaker was created: it has no state before.
	CreatedAt time.Time `json:"created_at"`
	// Tools are the tools behind the dependency (WithTools), sorted; empty
	// when the page was not told.
	Tools []string `json:"tools"`
	// Policy is what trips the breaker and how long it holds.
	Policy PolicyInfo `json:"policy"`
	// LastTrip is the breaker's last trip from closed, with the window
	// that tripped it; null if it never tripped.
	LastTrip *Trip `json:"last_trip"`
	// Refusals counts refused calls since the breaker was created, by
	// reason: circuit_open, half_open_busy, isolated, saturated.
	Refusals map[string]uint64 `json:"refusals"`
	// RecentRefusals are the latest changes of those counters as the page
	// sampled them (about once a second; see Refusal), oldest first, at
	// most RecentRefusals.
	RecentRefusals []Refusal `json:"recent_refusals"`
	// Rates are the last ten minutes of traffic.
	Rates Rates `json:"rates"`
	// Throttle is the dependency's client-side adaptive throttle
	// (WithThrottles); absent when it has none.
	Throttle *Throttle `json:"throttle,omitempty"`
}

// PolicyInfo is the part of a dependency's policy an operator reads.
type PolicyInfo struct {
	// ConsecutiveFailures trips the breaker after that many failures in a
	// row; 0 when that trip is off.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// FailureRate trips it when that share of counted calls failed, once
	// MinCalls were counted in the window; 0 when that trip is off.
	FailureRate float64 `json:"failure_rate"`
	MinCalls    int     `json:"min_calls"`
	// WindowSeconds is the rolling window; CountWindow, when set, replaces
	// it with the last that many calls.
	WindowSeconds float64 `json:"window_seconds"`
	CountWindow   int     `json:"count_window,omitempty"`
	// SlowCallSeconds, when set, counts a slower success as a failure.
	SlowCallSeconds float64 `json:"slow_call_seconds,omitempty"`
	// MaxConcurrent is the bulkhead; 0 for none.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// OpenSeconds is the first hold, MaxOpenSeconds what re-trips grow it to.
	OpenSeconds    float64 `json:"open_seconds"`
	MaxOpenSeconds float64 `json:"max_open_seconds"`
	HalfOpenProbes int     `json:"half_open_probes"`
}

// Trip is a trip from closed: when, why, and the window that did it.
type Trip struct {
	At     time.Time `json:"at"`
	Cause  string    `json:"cause"`
	Window Window    `json:"window"`
}

// Window is a breaker's window counts.
type Window struct {
	Requests            uint32 `json:"requests"`
	Successes           uint32 `json:"successes"`
	Failures            uint32 `json:"failures"`
	Exclusions          uint32 `json:"exclusions"`
	ConsecutiveFailures uint32 `json:"consecutive_failures"`
}

func policyInfo(p registry.Policy) PolicyInfo {
	out := PolicyInfo{
		MinCalls: p.MinCalls, WindowSeconds: p.Window.Seconds(), CountWindow: p.CountWindow,
		SlowCallSeconds: p.SlowCall.Seconds(), MaxConcurrent: p.MaxConcurrent,
		OpenSeconds: p.OpenFor.Seconds(), MaxOpenSeconds: p.MaxOpenFor.Seconds(), HalfOpenProbes: p.HalfOpenProbes,
	}
	if !p.DisableConsecutiveFailures {
		out.ConsecutiveFailures = p.ConsecutiveFailures
	}
	if !p.DisableFailureRate {
		out.FailureRate = p.FailureRate
	}
	return out
}

// Counts are a breaker's counters: the first five over the current window,
// the last two since the breaker was created.
type Counts struct {
	Requests            uint32 `json:"requests"`
	Successes           uint32 `json:"successes"`
	Failures            uint32 `json:"failures"`
	Exclusions          uint32 `json:"exclusions"`
	ConsecutiveFailures uint32 `json:"consecutive_failures"`
	ShortCircuits       uint64 `json:"short_circuits"`
	Trips               uint64 `json:"trips"`
	ShadowRefusals      uint64 `json:"shadow_refusals"`
}

// Transition is one state change.
type Transition struct {
	Seq         uint64    `json:"seq"`
	Dependency  string    `json:"dependency"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Cause       string    `json:"cause"`
	At          time.Time `json:"at"`
	HoldSeconds float64   `json:"hold_seconds,omitempty"`
}

// ActionsInfo describes the operator actions.
type ActionsInfo struct {
	Enabled bool `json:"enabled"`
}

// Document builds the current status document.
func (h *Handler) Document() Document {
	h.sample()
	now := h.reg.Clock().Now()
	snap := h.reg.Snapshot()
	d := Document{
		Schema:             Schema,
		GeneratedAt:        now.UTC(),
		Health:             "pass",
		Dependencies:       make([]Dependency, 0, len(snap)),
		DroppedTransitions: h.reg.DroppedTransitions(),
		Actions:            ActionsInfo{Enabled: h.o.actions},
		Fleet:              h.fleetSection(),
		Cost:               h.costSection(),
	}
	for _, s := range snap {
		if s.State != registry.StateClosed {
			d.Health = "warn"
		}
		dep := Dependency{
			Name:              string(s.Key),
			State:             s.State.String(),
			ProbeDue:          s.HoldEnded,
			Isolated:          s.Isolated,
			Since:             s.Since.UTC(),
			RetryAfterSeconds: registry.RetrySeconds(s.RetryAfter),
			Counts: Counts{
				Requests: s.Counts.Requests, Successes: s.Counts.Successes, Failures: s.Counts.Failures,
				Exclusions: s.Counts.Exclusions, ConsecutiveFailures: s.Counts.ConsecutiveFailures,
				ShortCircuits: s.Counts.ShortCircuits, Trips: s.Counts.Trips, ShadowRefusals: s.Counts.ShadowRefusals,
			},
			Mode: "enforce",
		}
		if s.HoldEnded {
			// The hold is over but no call has come to probe: the breaker is
			// still open, as Since, the transitions and the log say.
			dep.State = registry.StateOpen.String()
		}
		if !s.Since.IsZero() {
			dep.InStateSeconds = max(0, now.Sub(s.Since).Seconds())
		}
		if n := s.Counts.Successes + s.Counts.Failures; n > 0 {
			r := float64(s.Counts.Failures) / float64(n)
			dep.FailureRate = &r
		}
		p := h.reg.PolicyFor(s.Key)
		if !p.DisableFailureRate {
			dep.FailureRateThreshold = p.FailureRate
		}
		if p.Shadow {
			dep.Mode = "shadow"
		}
		if s.Cause != 0 {
			dep.Cause = s.Cause.String()
		}
		dep.Policy = policyInfo(p)
		dep.Throttle = h.throttleOf(s.Key)
		dep.Tools = h.o.tools[s.Key]
		if dep.Tools == nil {
			dep.Tools = []string{}
		}
		dep.Refusals = map[string]uint64{}
		if b, ok := h.reg.Lookup(s.Key); ok {
			dep.CreatedAt = b.Created().UTC()
			for r, n := range b.Refusals() {
				if r != int(registry.NotRefused) {
					dep.Refusals[registry.Refusal(r).String()] = n
				}
			}
			if tr, ok := b.LastTrip(); ok {
				w := tr.Window
				dep.LastTrip = &Trip{At: tr.At.UTC(), Cause: tr.Cause.String(), Window: Window{
					Requests: w.Requests, Successes: w.Successes, Failures: w.Failures,
					Exclusions: w.Exclusions, ConsecutiveFailures: w.ConsecutiveFailures,
				}}
			}
		}
		h.rmu.Lock()
		if se := h.series[s.Key]; se != nil {
			dep.Rates, dep.RecentRefusals = se.rates(now)
		}
		h.rmu.Unlock()
		if dep.RecentRefusals == nil {
			dep.RecentRefusals = []Refusal{}
		}
		d.Dependencies = append(d.Dependencies, dep)
	}
	ts := h.transitions()
	d.Transitions = make([]Transition, len(ts))
	for i, t := range ts {
		d.Transitions[i] = Transition{
			Seq: t.Seq, Dependency: string(t.Key), From: t.From.String(), To: t.To.String(),
			Cause: t.Cause.String(), At: t.At.UTC(), HoldSeconds: t.RetryAfter.Seconds(),
		}
	}
	return d
}

func (h *Handler) serveJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(h.Document())
}

// Health is the document of the health endpoint, in the shape of the
// (expired) IETF draft "Health Check Response Format for HTTP APIs":
// status is "pass" or "warn", never "fail".
type Health struct {
	Status      string                   `json:"status"`
	Description string                   `json:"description"`
	Checks      map[string][]HealthCheck `json:"checks"`
}

// HealthCheck is one dependency's entry.
type HealthCheck struct {
	ComponentID   string `json:"componentId"`
	Status        string `json:"status"`
	ObservedValue string `json:"observedValue"`
}

// HealthKey is the key of the dependency checks in Health.Checks.
const HealthKey = "adkbreaker:dependencies"

// HealthDocument builds the health document: "pass" when every dependency is
// closed, "warn" (degraded) otherwise.
func (h *Handler) HealthDocument() Health {
	snap := h.reg.Snapshot()
	out := Health{Status: "pass", Description: "all dependencies available", Checks: map[string][]HealthCheck{HealthKey: {}}}
	degraded := 0
	for _, s := range snap {
		c := HealthCheck{ComponentID: string(s.Key), Status: "pass", ObservedValue: s.State.String()}
		if s.HoldEnded {
			c.ObservedValue = registry.StateOpen.String() // until a call probes it
		}
		if s.State != registry.StateClosed {
			c.Status = "warn"
			degraded++
		}
		out.Checks[HealthKey] = append(out.Checks[HealthKey], c)
	}
	if degraded > 0 {
		out.Status = "warn"
		out.Description = "degraded: some dependencies are unavailable; the agent answers without them"
	}
	return out
}

func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/health+json")
	w.Header().Set("Cache-Control", "no-store")
	// Always 200: degraded is not down.
	_ = json.NewEncoder(w).Encode(h.HealthDocument())
}

// retrySeconds is a retry delay in seconds: -1 for registry.UntilReset.
