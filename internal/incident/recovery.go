package incident

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/sony/gobreaker/v2"
)

// -scenario recovery: what a probe schedule costs when the dependency
// comes back. The baselines' table replays one 9-minute outage, so its
// recovery column is an accident of where the last probe happens to fall;
// this study replays outages of every length from 1 to 15 minutes (every
// RecoveryStep) through each configuration's breaker and reports the
// calls that reached the dead dependency and the recovery — from the
// dependency's return to the first call that succeeded — as a
// distribution. It drives the breakers directly on a fake clock (no
// runner, no model): a call every 100 ms (the incident's turn rate), a
// 503 in 20 ms while the dependency is down (mode fast, which isolates the
// probe schedule), a success in 50 ms otherwise, after a minute of
// healthy traffic. The jitter source is seeded by the outage's length, so
// the run is deterministic and the lengths see different jitter.

// Outage lengths of the study.
const (
	RecoveryShortest = time.Minute
	RecoveryLongest  = 15 * time.Minute
	// RecoveryStep is -scenario recovery's spacing of outage lengths (841
	// lengths).
	RecoveryStep   = time.Second
	recoveryWarmup = time.Minute
	// recoveryGiveUp ends a run whose breaker never lets a call through
	// after the outage (an error: every configuration here probes).
	recoveryGiveUp = time.Hour
)

// recoveryBuckets are the report's ranges of outage lengths, [from, to].
var recoveryBuckets = [][2]time.Duration{
	{time.Minute, 3 * time.Minute},
	{3*time.Minute + RecoveryStep, 6 * time.Minute},
	{6*time.Minute + RecoveryStep, 10 * time.Minute},
	{10*time.Minute + RecoveryStep, 15 * time.Minute},
}

// RecoveryConfig is one configuration of the study.
type RecoveryConfig struct {
	Name  string
	Holds string // the hold schedule, for the table
	// Build returns the configuration's breaker on clk; rnd is the
	// jitter source (breakers without jitter ignore it).
	Build func(clk *registrytest.FakeClock, rnd func() float64) (TailGuard, error)
}

// RegistryRecovery is adkbreaker's breaker with policy p in the study.
func RegistryRecovery(name, holds string, p registry.Policy) RecoveryConfig {
	return RecoveryConfig{Name: name, Holds: holds, Build: func(clk *registrytest.FakeClock, rnd func() float64) (TailGuard, error) {
		reg, err := registry.New(registry.WithClock(clk), registry.WithRand(rnd), registry.WithPolicy(Dependency, p))
		if err != nil {
			return nil, err
		}
		b, err := reg.Get(Dependency)
		return registryTail{b}, err
	}}
}

// recoveryOldCap is the default hold cap before it became 2 minutes.
const recoveryOldCap = "adkbreaker max_open_for: 1m (the default before)"

// RecoveryConfigs are the study's configurations: the baselines' fixed
// 60 s holds, adkbreaker's defaults, and the alternatives measured before
// choosing them (docs/incident.md, "Recovery: what the longer cap costs").
var RecoveryConfigs = []RecoveryConfig{
	{Name: NameGobreaker, Holds: "60 s fixed", Build: func(clk *registrytest.FakeClock, _ func() float64) (TailGuard, error) {
		return newGobreakerTail(clk, gobreaker.Settings{Name: "enrich"}), nil
	}},
	{Name: NameNemo, Holds: "60 s fixed", Build: func(clk *registrytest.FakeClock, _ func() float64) (TailGuard, error) {
		return nemoTail{newNemoGuard(clk, "enrich")}, nil
	}},
	RegistryRecovery(recoveryOldCap, "30, 60, 60, … s", registry.Policy{MaxOpenFor: time.Minute}),
	RegistryRecovery("adkbreaker max_open_for: 90s", "30, 60, 90, 90, … s", registry.Policy{MaxOpenFor: 90 * time.Second}),
	RegistryRecovery(NameDefaults, "30, 60, 120, 120, … s (max_open_for: 2m)", registry.Policy{}),
	RegistryRecovery("adkbreaker open_backoff: 3, max_open_for: 2m", "30, 90, 120, 120, … s", registry.Policy{OpenBackoff: 3, MaxOpenFor: 2 * time.Minute}),
	RegistryRecovery("adkbreaker open_backoff: 3, max_open_for: 90s", "30, 90, 90, … s", registry.Policy{OpenBackoff: 3, MaxOpenFor: 90 * time.Second}),
	RegistryRecovery("adkbreaker max_open_for: 5m", "30, 60, 120, 240, 300, … s", registry.Policy{MaxOpenFor: 5 * time.Minute}),
}

// RecoveryRun is one outage replayed through one configuration.
type RecoveryRun struct {
	Outage    time.Duration
	DeadCalls int           // calls that started while the dependency was down
	Recovery  time.Duration // from its return to the first call that succeeded
}

// runRecovery replays an outage of length outage through c's breaker.
func runRecovery(c RecoveryConfig, outage time.Duration) (RecoveryRun, error) {
	clk := registrytest.NewFakeClock(epoch)
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(uint64(outage/time.Millisecond), 12))
	g, err := c.Build(clk, func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	})
	if err != nil {
		return RecoveryRun{}, err
	}
	from, to := recoveryWarmup, recoveryWarmup+outage
	out := RecoveryRun{Outage: outage}
	for at := time.Duration(0); at < to+recoveryGiveUp; at += TurnEvery {
		clk.Set(epoch.Add(at))
		done, ok := g.reserve()
		if !ok {
			continue
		}
		if at >= from && at < to {
			out.DeadCalls++
			clk.Set(epoch.Add(at + fastFailure))
			done(true)
			continue
		}
		clk.Set(epoch.Add(at + HealthyLatency))
		done(false)
		if at >= to {
			out.Recovery = at - to
			return out, nil
		}
	}
	return out, fmt.Errorf("%s, a %s outage: no call got through within %s of the dependency's return", c.Name, outage, recoveryGiveUp)
}

// RecoveryResults are the study's runs: runs[configuration][length].
type RecoveryResults struct {
	Configs []RecoveryConfig
	Runs    [][]RecoveryRun
}

// RunRecovery replays every outage length from RecoveryShortest to
// RecoveryLongest, every step, and the baselines' 9 minutes, through every
// configuration, at most GOMAXPROCS at a time.
func RunRecovery(step time.Duration, configs []RecoveryConfig) (*RecoveryResults, error) {
	var lengths []time.Duration
	for l := RecoveryShortest; l <= RecoveryLongest; l += step {
		lengths = append(lengths, l)
	}
	if nine := OutageTo - OutageFrom; !slices.Contains(lengths, nine) {
		lengths = append(lengths, nine)
		slices.Sort(lengths)
	}
	out := &RecoveryResults{Configs: configs, Runs: make([][]RecoveryRun, len(configs))}
	type job struct{ i, k int }
	var jobs []job
	for i := range configs {
		out.Runs[i] = make([]RecoveryRun, len(lengths))
		for k := range lengths {
			jobs = append(jobs, job{i, k})
		}
	}
	err := runJobs(len(jobs), func(n int) error {
		j := jobs[n]
		var err error
		out.Runs[j.i][j.k], err = runRecovery(configs[j.i], lengths[j.k])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecoveryStats summarises runs.
type RecoveryStats struct {
	Runs                       int
	DeadMean                   float64
	DeadMax                    int
	RecoveryMean               time.Duration
	RecoveryP90, RecoveryWorst time.Duration
	OutageWorst                time.Duration // the outage length of the worst recovery
	recoveries                 []time.Duration
	deadSum                    int
	recoverySum                time.Duration
}

// Stats summarises configuration name's runs whose outage is in [from, to].
func (r *RecoveryResults) Stats(name string, from, to time.Duration) RecoveryStats {
	var s RecoveryStats
	for i, c := range r.Configs {
		if c.Name != name {
			continue
		}
		for _, run := range r.Runs[i] {
			if run.Outage < from || run.Outage > to {
				continue
			}
			s.Runs++
			s.deadSum += run.DeadCalls
			s.DeadMax = max(s.DeadMax, run.DeadCalls)
			s.recoverySum += run.Recovery
			s.recoveries = append(s.recoveries, run.Recovery)
			if run.Recovery > s.RecoveryWorst {
				s.RecoveryWorst, s.OutageWorst = run.Recovery, run.Outage
			}
		}
	}
	if s.Runs == 0 {
		panic(fmt.Sprintf("recovery: no runs of %q in [%s, %s]", name, from, to))
	}
	s.DeadMean = float64(s.deadSum) / float64(s.Runs)
	s.RecoveryMean = s.recoverySum / time.Duration(s.Runs)
	slices.Sort(s.recoveries)
	s.RecoveryP90 = s.recoveries[min(len(s.recoveries)-1, (9*len(s.recoveries)+9)/10-1)]
	return s
}

// All is Stats over every length.
func (r *RecoveryResults) All(name string) RecoveryStats {
	return r.Stats(name, RecoveryShortest, RecoveryLongest)
}

// At is configuration name's run of the outage of length outage.
func (r *RecoveryResults) At(name string, outage time.Duration) RecoveryStats {
	return r.Stats(name, outage, outage)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// ReportRecovery writes the study's tables and, last, a summary line.
func ReportRecovery(w io.Writer, r *RecoveryResults, step time.Duration) {
	n := r.All(r.Configs[0].Name).Runs
	fmt.Fprintf(w, "recovery: %d outages of %s to %s (every %s) after %s of healthy traffic; a call every %s; down: 503 in %s; up: success in %s;\n",
		n, RecoveryShortest, RecoveryLongest, step, recoveryWarmup, TurnEvery, fastFailure, HealthyLatency)
	fmt.Fprintln(w, "each configuration's breaker driven directly on a fake clock, the jitter seeded by the outage's length")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | holds | calls to the dead dependency: mean / max | 9-minute outage | recovery mean | recovery p90 | recovery worst (outage) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|")
	for _, c := range r.Configs {
		s, nine := r.All(c.Name), r.At(c.Name, 9*time.Minute)
		fmt.Fprintf(w, "| %s | %s | %.1f / %d | %d | %s | %s | %s (%s) |\n", c.Name, c.Holds, s.DeadMean, s.DeadMax, nine.DeadMax,
			secs(s.RecoveryMean), secs(s.RecoveryP90), secs(s.RecoveryWorst), s.OutageWorst)
	}
	fmt.Fprintln(w)
	var head, rule []string
	for _, b := range recoveryBuckets {
		head = append(head, fmt.Sprintf("%s–%s", fmtMin(b[0]), fmtMin(b[1])))
		rule = append(rule, "--:")
	}
	fmt.Fprintf(w, "By outage length, calls to the dead dependency (mean) and recovery (mean / worst):\n\n")
	fmt.Fprintf(w, "| configuration | %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|---|%s|\n", strings.Join(rule, "|"))
	for _, c := range r.Configs {
		var cells []string
		for _, b := range recoveryBuckets {
			s := r.Stats(c.Name, b[0], b[1])
			cells = append(cells, fmt.Sprintf("%.1f; %.0f / %.0f s", s.DeadMean, s.RecoveryMean.Seconds(), s.RecoveryWorst.Seconds()))
		}
		fmt.Fprintf(w, "| %s | %s |\n", c.Name, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	d := r.All(NameDefaults)
	fmt.Fprintf(w, "summary: scenario=recovery adkbreaker_defaults dead_calls_mean=%.1f recovery_mean_s=%.1f recovery_p90_s=%.1f recovery_worst_s=%.1f\n",
		d.DeadMean, d.RecoveryMean.Seconds(), d.RecoveryP90.Seconds(), d.RecoveryWorst.Seconds())
}

// fmtMin writes d in minutes and seconds, without trailing zero units (1m,
// 3m5s, 3m10s, 1h).
func fmtMin(d time.Duration) string {
	s := d.String()
	switch {
	case d == 0:
	case d%time.Hour == 0:
		s = strings.TrimSuffix(s, "0m0s")
	case d%time.Minute == 0:
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}
