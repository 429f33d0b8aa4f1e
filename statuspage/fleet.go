package statuspage

import (
	"errors"
	"maps"
	"regexp"
)

// Fleet is the fleet-sharing section of the status document: whether this
// replica shares its breakers with the others through Redis, the kind of
// the last Redis error (a fixed class such as "timeout" or "refused", never
// error text), and the fleet's counters by name. It is present only with
// WithFleet.
type Fleet struct {
	// Sharing is true while the replica is subscribed and Redis answers;
	// false means it breaks on its own (local breaking is unaffected).
	Sharing   bool              `json:"sharing"`
	LastError string            `json:"last_error,omitempty"`
	Counters  map[string]uint64 `json:"counters"`
}

// FleetStatus reads a replica's fleet state; package fleet's
// (*Fleet).Status has this shape, so WithFleet(f.Status) wires it without
// the status page depending on Redis.
type FleetStatus func() (sharing bool, lastError string, counters map[string]uint64)

// WithFleet adds a fleet section to the page and the document, read from
// status on every render. The section is informational: a fleet that cannot
// reach Redis does not change the page's health, because every replica still
// breaks on its own.
func WithFleet(status FleetStatus) Option {
	return func(o *options) { o.fleet, o.fleetSet = status, true }
}

// fleetNames are what a counter name or error class may look like: fixed
// identifiers, so nothing an upstream error said can reach the page.
var fleetNames = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)

// fleetSection reads the fleet's status, or nil without WithFleet. Names
// that are not plain identifiers are left out.
func (h *Handler) fleetSection() *Fleet {
	if h.o.fleet == nil {
		return nil
	}
	sharing, lastErr, counters := h.o.fleet()
	f := &Fleet{Sharing: sharing, Counters: make(map[string]uint64, len(counters))}
	if fleetNames.MatchString(lastErr) {
		f.LastError = lastErr
	}
	for name, v := range maps.All(counters) {
		if fleetNames.MatchString(name) {
			f.Counters[name] = v
		}
	}
	return f
}

var errFleetNil = errors.New("statuspage: WithFleet: status func is nil")
