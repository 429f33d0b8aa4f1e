package registry

import (
	"sync"
	"sync/atomic"
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

// admissions is the registry's set of Admissions, held weakly. Admitted
// runs on every call of a self-admitting client (mcpguard), so it reads the
// list without locking; writers serialise on mu and publish a new copy.
type admissions struct {
	mu   sync.Mutex                                // serialises writers
	list atomic.Pointer[[]weak.Pointer[Admission]] // copied on write, never modified in place
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
	var old []weak.Pointer[Admission]
	if p := r.adm.list.Load(); p != nil {
		old = *p
	}
	kept := make([]weak.Pointer[Admission], 0, len(old)+1)
	for _, w := range old {
		if w.Value() != nil {
			kept = append(kept, w)
		}
	}
	kept = append(kept, weak.Make(a))
	r.adm.list.Store(&kept)
}

// Admitted reports whether a registered Admission has admitted call on
// key's breaker and not yet reported it: the call is already counted, and
// must not be admitted again. A client that consults it should call the
// breaker's SetSelfAdmitting when it is built; Admitted marks the breaker
// itself too, so that layers see it from the next call on.
func (r *Registry) Admitted(call any, key Key) bool {
	if b, ok := r.Lookup(key); ok && !b.selfAdmit.Load() {
		b.selfAdmit.Store(true)
	}
	p := r.adm.list.Load()
	if p == nil {
		return false
	}
	for _, w := range *p {
		if a := w.Value(); a != nil && a.admitted(call, key) {
			return true
		}
	}
	return false
}
