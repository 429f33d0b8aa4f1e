package incident

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSimOrdersWakeups: activities sleep in virtual time; the driver wakes
// them in time order (FIFO among equals), one at a time, and returns when
// none is left. No real time passes.
func TestSimOrdersWakeups(t *testing.T) {
	s := NewSim()
	var mu sync.Mutex
	var got []string
	note := func(name string) {
		mu.Lock()
		got = append(got, name+"@"+s.Since().String())
		mu.Unlock()
	}
	start := time.Now()
	s.Go(func() {
		s.Go(func() { s.Sleep(5 * time.Second); note("hang") })
		s.Go(func() { s.Sleep(20 * time.Millisecond); note("fast") })
		s.Sleep(time.Second)
		note("tick")
		s.Sleep(4 * time.Second)
		note("tock") // same time as hang, which slept first
	})
	s.Run()
	want := "fast@20ms tick@1s hang@5s tock@5s"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("order %q, want %q", g, want)
	}
	if real := time.Since(start); real > 2*time.Second {
		t.Fatalf("took %s of real time", real)
	}
	if s.Since() != 5*time.Second {
		t.Fatalf("clock at %s", s.Since())
	}
}

// TestSummaryLine: the report ends with the summary line CI greps for.
func TestSummaryLine(t *testing.T) {
	rs := []*Result{
		{Variant: "none", Dep: DepStats{DeadCalls: 100}},
		{Variant: "retryandreflect", Dep: DepStats{DeadCalls: 90}},
		{Variant: "adkbreaker", Dep: DepStats{DeadCalls: 3, firstOK: epoch.Add(OutageTo + 1500*time.Millisecond)}},
		{Variant: "adkbreaker-defaults", Dep: DepStats{DeadCalls: 4}},
	}
	var b strings.Builder
	Report(&b, "hang", HealthyLatency, rs)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := "summary: mode=hang dead_calls_none=100 dead_calls_retryandreflect=90 dead_calls_adkbreaker=3 recovery_s=1.5 llm_calls_per_turn=0.00"
	if got := lines[len(lines)-1]; got != want {
		t.Fatalf("last line\n%s\nwant\n%s", got, want)
	}
}
