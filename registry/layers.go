package registry

import (
	"fmt"
	"time"
)

// Layered timeouts (the rule: "each outer timeout must exceed the plausible
// sum of the inner ones"). A breaker judges calls through durations that
// nest: a call's outcome must arrive inside the rolling window that counts
// it, and a probe's outcome inside its lease. When an inner duration reaches
// the outer one, the outer fires first and the breaker loses the outcome:
// slow calls are never counted, probes are judged failed while they run.
//
// Each row is one such pair, compared on resolved values (a zero field means
// its default) and only when the inner duration is set. To cover a new
// duration field (a call timeout, say), add its rows here; Validate reports
// them with every other problem.
var layers = []struct {
	outer, inner string
	get          func(p Policy) (outer, inner time.Duration)
	why          string
}{
	{
		"window", "slow_call",
		func(p Policy) (time.Duration, time.Duration) { return p.Window, p.SlowCall },
		"a call slower than the window has left it when it ends, so slow calls are never counted",
	},
	{
		"window", "call_timeout",
		func(p Policy) (time.Duration, time.Duration) { return p.Window, p.CallTimeout },
		"a call that runs to its timeout has left the window when it ends, so timeouts are never counted",
	},
	{
		"probe_lease", "call_timeout",
		func(p Policy) (time.Duration, time.Duration) { return p.ProbeLease, p.CallTimeout },
		"a probe that runs to its timeout is judged failed by its lease while it still runs",
	},
	// probe_lease ≥ slow_call is checked in Validate itself.
}

// layerErrs reports the pairs of resolved policy r whose outer duration does
// not exceed the inner one.
func layerErrs(r Policy) []error {
	var errs []error
	for _, l := range layers {
		outer, inner := l.get(r)
		if inner > 0 && outer > 0 && outer <= inner {
			errs = append(errs, fmt.Errorf("%s: must exceed %s (%s), got %s: %s", l.outer, l.inner, inner, outer, l.why))
		}
	}
	return errs
}
