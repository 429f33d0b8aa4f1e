package statuspage

import (
	"errors"
	"math"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Throttle is a dependency's client-side adaptive throttle in the status
// document: the probability that a call arriving now is sent straight to
// the next endpoint without calling this one, and how many calls it has
// sent there so far. It is present only for a dependency that a
// ThrottleSource (WithThrottles) reports a throttle for.
type Throttle struct {
	RejectProbability float64 `json:"reject_probability"`
	Rejections        uint64  `json:"rejections"`
}

// ThrottleSource reads the throttle of one dependency: its reject
// probability and rejections, and ok false for a key it has no throttle
// for. Package failover's (*Model).ThrottleOf has this shape, so
// WithThrottles(model.ThrottleOf) wires a failover model's throttles in
// without either package importing the other.
type ThrottleSource func(key registry.Key) (rejectProbability float64, rejections uint64, ok bool)

// WithThrottles shows the adaptive throttles the sources report, in each
// dependency's row ("throttling 33 %" while it sheds calls) and as the
// dependency's throttle member of the document, read on every render.
// For a dependency several sources know, the first that reports one wins;
// the option may be given more than once (one source per failover model).
// A throttle is informational: it does not change the page's health, since
// the calls it sheds are served by the next endpoint. A probability that is
// not in [0, 1] is left out.
func WithThrottles(sources ...ThrottleSource) Option {
	return func(o *options) {
		if len(sources) == 0 {
			o.throttleErrs = append(o.throttleErrs, errThrottlesNone)
		}
		for _, s := range sources {
			if s == nil {
				o.throttleErrs = append(o.throttleErrs, errThrottlesNil)
				continue
			}
			o.throttles = append(o.throttles, s)
		}
	}
}

// throttleOf is key's throttle from the first source that reports one, or
// nil.
func (h *Handler) throttleOf(key registry.Key) *Throttle {
	for _, s := range h.o.throttles {
		p, n, ok := s(key)
		if !ok {
			continue
		}
		if math.IsNaN(p) || p < 0 || p > 1 {
			return nil
		}
		return &Throttle{RejectProbability: p, Rejections: n}
	}
	return nil
}

var (
	errThrottlesNil  = errors.New("statuspage: WithThrottles: a source func is nil")
	errThrottlesNone = errors.New("statuspage: WithThrottles: no source given")
)
