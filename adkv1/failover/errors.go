package failover

import (
	"errors"
	"strings"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// ErrUnavailable matches (errors.Is) every *Error: no endpoint of the chain
// could answer.
var ErrUnavailable = errors.New("failover: no model endpoint could answer")

// Attempt is what happened at one endpoint of a call that failed over.
type Attempt struct {
	Endpoint registry.Key
	Model    string
	Reason   Reason
	// RetryAfter is when the endpoint may be tried again, as known then.
	RetryAfter time.Duration
	// Err is the endpoint's error; nil when it was skipped (breaker open or
	// held). When the endpoint's first chunk or answer came after its
	// Timeout fired, it is the Timeout's own error (the chunk was dropped).
	Err error
}

// Error is yielded when no endpoint of the chain could answer: each was
// skipped or failed with an error that fails over. errors.Is(err,
// ErrUnavailable) is true; errors.Is(err, registry.ErrOpen) is true when
// every endpoint was skipped without a call; errors.As reaches the endpoints'
// own errors (genai.APIError, say) through Unwrap.
//
// Its message never contains an endpoint's error text: an agent used as a
// tool (agenttool) can hand it to the calling model, and a Gemini error's
// text is the server's (its message, URLs, whatever the request echoed). The
// message names the chain, each endpoint's key, its reason and its retry
// time, all from the configuration or closed sets; the causes stay in
// Attempts, in Unwrap and in the failover log lines.
type Error struct {
	// Model is the failover Model's name.
	Model string
	// Attempts lists every endpoint in chain order.
	Attempts []Attempt
	// RetryAfter is when the first endpoint may be tried again; zero when
	// one may be tried now (it failed, but its breaker is still closed).
	RetryAfter time.Duration
}

// Error describes the chain from configuration and closed sets only (see
// Error): no endpoint's error text.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("failover: model ")
	b.WriteString(e.Model)
	b.WriteString(": no endpoint could answer")
	switch {
	case e.RetryAfter == registry.UntilReset:
		b.WriteString(" (isolated until an operator resets it)")
	case e.RetryAfter > 0:
		b.WriteString(" (retry after ")
		b.WriteString(e.RetryAfter.Round(time.Second).String())
		b.WriteString(")")
	}
	for i, a := range e.Attempts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(string(a.Endpoint))
		b.WriteString(" (")
		b.WriteString(a.Reason.closed())
		if a.Err == nil {
			b.WriteString(", not called")
		}
		switch {
		case a.RetryAfter == registry.UntilReset:
			b.WriteString(", isolated")
		case a.RetryAfter > 0:
			b.WriteString(", retry after ")
			b.WriteString(a.RetryAfter.Round(time.Second).String())
		}
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the endpoints' errors.
func (e *Error) Unwrap() []error {
	var out []error
	for _, a := range e.Attempts {
		if a.Err != nil {
			out = append(out, a.Err)
		}
	}
	return out
}

// Is reports whether target is ErrUnavailable, or registry.ErrOpen when no
// endpoint was called.
func (e *Error) Is(target error) bool {
	return target == ErrUnavailable || (target == registry.ErrOpen && e.allSkipped())
}

// RetryAfterHint returns e.RetryAfter (registry.RetryHinter), so an agent
// used as a tool reports it to the calling agent's breaker. It is 0 when
// every endpoint is isolated: no retry time is known.
func (e *Error) RetryAfterHint() time.Duration {
	if e.RetryAfter == registry.UntilReset {
		return 0
	}
	return e.RetryAfter
}

func (e *Error) allSkipped() bool {
	for _, a := range e.Attempts {
		if a.Err != nil {
			return false
		}
	}
	return true
}

// Event is one failover hop: a call left From for To.
type Event struct {
	// Model is the failover Model's name.
	Model string
	// From is the endpoint left, and FromModel its model name.
	From      registry.Key
	FromModel string
	// To is the next endpoint in the chain, and ToModel its model name;
	// empty when From was the last (the call then fails or, with
	// WithAnswerWhenUnavailable, answers that the assistant is unavailable).
	To      registry.Key
	ToModel string
	Reason  Reason
	// RetryAfter is when From may be tried again, as known now.
	RetryAfter time.Duration
	// Err is From's error; nil when it was skipped.
	Err error
	// At is the registry clock's time of the hop.
	At time.Time
}
