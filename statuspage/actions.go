package statuspage

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/loglimit"
	"github.com/adkbreaker/adkbreaker/registry"
)

// actionCounts counts operator action attempts by result.
type actionCounts struct {
	applied, unauthorized, unknown, invalid atomic.Uint64
	refusedLog                              *loglimit.Limiter // one "refused" line a minute
}

// ActionStats counts operator action attempts since the Handler was built.
type ActionStats struct {
	// Applied: authorised and carried out.
	Applied uint64 `json:"applied"`
	// Unauthorized: missing or wrong token; nothing changed.
	Unauthorized uint64 `json:"unauthorized"`
	// UnknownDependency: authorised, but no such dependency exists (none is
	// ever created by an action).
	UnknownDependency uint64 `json:"unknown_dependency"`
	// Invalid: authorised, but the request named no valid dependency.
	Invalid uint64 `json:"invalid"`
}

// ActionStats returns the operator action counters.
func (h *Handler) ActionStats() ActionStats {
	return ActionStats{
		Applied: h.actions.applied.Load(), Unauthorized: h.actions.unauthorized.Load(),
		UnknownDependency: h.actions.unknown.Load(), Invalid: h.actions.invalid.Load(),
	}
}

// serveAction carries out isolate or reset for the dependency named by the
// form (or query) value "dependency".
func (h *Handler) serveAction(w http.ResponseWriter, r *http.Request, action string) {
	log := h.o.logger.With("component", "adkbreaker.statuspage", "action", action, "remote", r.RemoteAddr)
	if !h.authorized(r) {
		n := h.actions.unauthorized.Add(1)
		// Anyone who reaches the page can send bad tokens: log one line a
		// minute with the running count and how many were left out, so a
		// flood of attempts cannot flood the logs (ActionStats counts every
		// one).
		if ok, suppressed := h.actions.refusedLog.Allow("unauthorized", h.reg.Clock().Now()); ok {
			log.Warn("adkbreaker: operator action refused: missing or wrong token", "unauthorized_total", n, "suppressed", suppressed)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="adkbreaker"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		h.actions.invalid.Add(1)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	key := registry.Key(r.Form.Get("dependency"))
	if !key.Valid() {
		h.actions.invalid.Add(1)
		log.Warn("adkbreaker: operator action refused: invalid dependency name")
		http.Error(w, "invalid dependency", http.StatusBadRequest)
		return
	}
	b, ok := h.reg.Lookup(key)
	if !ok {
		h.actions.unknown.Add(1)
		log.Warn("adkbreaker: operator action refused: unknown dependency", "dependency", string(key))
		http.Error(w, "unknown dependency", http.StatusNotFound)
		return
	}
	switch action {
	case "isolate":
		b.Isolate()
	case "reset":
		b.Reset()
	}
	h.actions.applied.Add(1)
	log.Warn("adkbreaker: operator action applied", "dependency", string(key))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Dependency string    `json:"dependency"`
		Action     string    `json:"action"`
		State      string    `json:"state"`
		Isolated   bool      `json:"isolated"`
		At         time.Time `json:"at"`
	}{string(key), action, b.State().String(), b.Status().Isolated, h.reg.Clock().Now().UTC()})
}
