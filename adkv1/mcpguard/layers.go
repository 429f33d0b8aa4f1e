package mcpguard

import (
	"fmt"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Layered timeouts (the rule: "each outer timeout must exceed the plausible
// sum of the inner ones"). An operation's budget contains its legs: a
// reconnect and the tool list, or a reconnect and the call. A budget smaller
// than one full attempt cuts the leg short, so the leg's own timeout never
// fires and every slow answer reads as "budget exhausted". The breaker that
// judges the operation contains the budget in turn: its outcome must arrive
// inside the rolling window that counts it (a timed-out operation older than
// the window is never counted, so timeouts could never open the breaker)
// and inside a probe's lease.
//
// Each row is one pair, compared on resolved values. To cover a new duration
// (a registry.Policy call timeout, a new leg), add a row; Validate and New
// report them with every other problem.

// legLayers are checked by Server.Validate: the budget must hold one full
// attempt of each operation, counting the legs that are set. A leg left at
// zero is not counted: its default is a ceiling the budget may narrow (a
// server given only OperationBudget: 5s means "all of it within 5s").
var legLayers = []struct {
	name string
	legs func(s Server) []time.Duration
	desc string
}{
	{"discovery", func(s Server) []time.Duration { return []time.Duration{s.ConnectTimeout, s.DiscoveryTimeout} }, "connect_timeout + discovery_timeout"},
	{"call", func(s Server) []time.Duration { return []time.Duration{s.ConnectTimeout, s.CallTimeout} }, "connect_timeout + call_timeout"},
}

// breakerLayers are checked by New against the policy the registry holds for
// the server: the operation must end inside the breaker's durations.
var breakerLayers = []struct {
	field  string
	get    func(p registry.Policy) time.Duration
	strict bool // the outer duration must exceed the budget, not only reach it
	why    string
}{
	{"probe_lease", func(p registry.Policy) time.Duration { return p.ProbeLease }, false, "a probe could outlive its lease"},
	{"window", func(p registry.Policy) time.Duration { return p.Window }, true, "an operation that runs out its budget leaves the window and is never counted"},
}

// legErrs reports the operations of server s whose set legs do not fit its
// (resolved) operation budget.
func legErrs(s Server) []error {
	var errs []error
	budget := s.WithDefaults().OperationBudget
	for _, l := range legLayers {
		var sum time.Duration
		for _, leg := range l.legs(s) {
			sum += leg
		}
		if budget < sum {
			errs = append(errs, fmt.Errorf("operation_budget: must be at least %s (%s) to hold one %s attempt, got %s", l.desc, sum, l.name, budget))
		}
	}
	return errs
}

// breakerErrs reports the durations of the breaker policy pol that do not
// contain the operation budget of resolved server d.
func breakerErrs(d Server, pol registry.Policy) []error {
	var errs []error
	for _, l := range breakerLayers {
		outer := l.get(pol)
		verb := "exceeds"
		if l.strict {
			verb = "reaches"
		}
		if outer < d.OperationBudget || l.strict && outer == d.OperationBudget {
			errs = append(errs, fmt.Errorf("operation_budget %s %s the breaker's %s %s: %s", d.OperationBudget, verb, l.field, outer, l.why))
		}
	}
	return errs
}
