// Command incident replays the reference incident on the real ADK runner, in
// virtual time, with and without a circuit breaker.
//
//	go run ./samples/incident -mode hang [-svg incident-hang.svg]
//	go run ./samples/incident -mode fast [-svg incident-fast.svg]
//	go run ./samples/incident -mode hang -healthy 200ms
//	go run ./samples/incident -scenario healthy-tail
//	go run ./samples/incident -scenario chain -mode fast|hang
//	go run ./samples/incident -scenario baselines
//	go run ./samples/incident -scenario recovery
//
// Fifteen simulated minutes; a new user turn every 100 ms; the enrichment
// API (answering in 50 ms, or -healthy, when up) is down from minute 3 to minute 12, hanging until the tool's 5 s
// timeout (-mode hang) or answering 503 in 20 ms (-mode fast). A scripted
// model retries a failed tool up to three times per turn unless told firmly
// not to. The same traffic runs through four variants — no breaker, ADK's
// retryandreflect plugin, adkbreaker with the incident's settings, adkbreaker
// with the library's defaults — and the program prints what reached the dead
// dependency, what the model spent, what users got and how fast the agent
// recovered. See docs/incident.md.
//
// Virtual time: the registry's Clock is a discrete-event clock advanced by
// the simulation driver (sim.go), so 15 minutes take a few seconds. The
// runner, flow, callbacks, plugins, sessions and breakers are the real ones.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/incident"
)

func main() {
	mode := flag.String("mode", "hang", `"hang" (calls block until the 5 s timeout) or "fast" (503 in 20 ms)`)
	svg := flag.String("svg", "", "write a chart of calls reaching the dependency per 10 s to this file")
	healthy := flag.Duration("healthy", incident.HealthyLatency, "the dependency's latency when it is up")
	scenario := flag.String("scenario", "incident", `"incident" (the outage, -mode), "healthy-tail" (the false-trip benchmark), "chain" (the outage behind a sub-agent, -mode), "baselines" (every mode and scenario, against gobreaker and NeMo-style breakers) or "recovery" (outages of 1 to 15 minutes: the probe schedules' dead calls and recovery)`)
	flag.Parse()
	// The replay allocates ADK's per-turn garbage for 36,000 turns; a lazier
	// collector saves about a tenth of its CPU for a few MB more heap.
	debug.SetGCPercent(400)
	var err error
	switch *scenario {
	case "incident":
		err = mainErr(os.Stdout, *mode, *healthy, *svg)
	case "healthy-tail":
		var rs []incident.TailResult
		if rs, err = incident.RunTails(incident.TailCalls); err == nil {
			incident.ReportTails(os.Stdout, rs)
		}
	case "chain":
		err = chainMain(os.Stdout, *mode)
	case "baselines":
		var r *incident.BaselineResults
		if r, err = runBaselines(incident.FullBaselines, baselines); err == nil {
			incident.ReportBaselines(os.Stdout, r)
		}
	case "recovery":
		var r *incident.RecoveryResults
		if r, err = incident.RunRecovery(incident.RecoveryStep, incident.RecoveryConfigs); err == nil {
			incident.ReportRecovery(os.Stdout, r, incident.RecoveryStep)
		}
	default:
		err = fmt.Errorf("-scenario must be \"incident\", \"healthy-tail\", \"chain\", \"baselines\" or \"recovery\", got %q", *scenario)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "incident:", err)
		os.Exit(1)
	}
}

func mainErr(w io.Writer, mode string, healthy time.Duration, svgPath string) error {
	results, err := runAll(mode, healthy, variants)
	if err != nil {
		return err
	}
	if svgPath != "" {
		if err := os.WriteFile(svgPath, []byte(incident.Chart(mode, results)), 0o644); err != nil {
			return err
		}
	}
	incident.Report(w, mode, healthy, results)
	return nil
}
