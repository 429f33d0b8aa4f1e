package registry

import (
	"sync"
	"weak"
)

// Admission stands for a layer that admits calls on a registry's breakers
// ahead of the call itself — the adkbreaker plugin admits a tool call in its
// before-tool callback and reports it after. A dependency client that can
// also be used without that layer (an MCP toolset) admits its own calls
// through the breaker only when no such layer already did, so that a call
// is admitted, and counted, once whichever layers are present (see
// Registry.Admitted).
type Admission struct {
	admitted func(call any, key Key) bool
}

// NewAdmission returns an Admission whose admitted reports whether call (an
// opaque identity of one call, compared by the layer itself: the ADK tool
// context for the plugin) is admitted on key's breaker and not yet reported.
// admitted must be fast and safe for concurrent use.
func NewAdmission(admitted func(call any, key Key) bool) *Admission {
	return &Admission{admitted: admitted}
}

// admissions is the registry's set of Admissions, held weakly.
type admissions struct {
	mu   sync.Mutex
	list []weak.Pointer[Admission] // Guarded by mu; copied on write, never modified in place.
}

// AddAdmission registers a. The registry holds it weakly: it is forgotten
// once its owner no longer references it, so an owner that goes away (a
// plugin built per request) needs no removal.
func (r *Registry) AddAdmission(a *Admission) {
	if a == nil || a.admitted == nil {
		return
	}
	r.adm.mu.Lock()
	defer r.adm.mu.Unlock()
	kept := make([]weak.Pointer[Admission], 0, len(r.adm.list)+1)
	for _, w := range r.adm.list {
		if w.Value() != nil {
			kept = append(kept, w)
		}
	}
	r.adm.list = append(kept, weak.Make(a))
}

// Admitted reports whether a registered Admission has admitted call on
// key's breaker and not yet reported it: the call is already counted, and
// must not be admitted again.
func (r *Registry) Admitted(call any, key Key) bool {
	r.adm.mu.Lock()
	list := r.adm.list
	r.adm.mu.Unlock()
	for _, w := range list {
		if a := w.Value(); a != nil && a.admitted(call, key) {
			return true
		}
	}
	return false
}
