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
}

// Dependency is one breaker's state.
type Dependency struct {
	Name     string `json:"name"`
	State    string `json:"state"` // closed, half_open, open
	Isolated bool   `json:"isolated"`
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
	}
	for _, s := range snap {
		if s.State != registry.StateClosed {
			d.Health = "warn"
		}
		dep := Dependency{
			Name:              string(s.Key),
			State:             s.State.String(),
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
