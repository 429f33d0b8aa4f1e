package main

import (
	"os"
	"strings"
	"testing"
)

// TestStormTargets measures what the storms scenario prints for the rows
// with targets, asserts the targets, and checks that README.md shows those
// rows as the run prints them (the runs are seeded, on a fake clock):
//
//   - a storm refusing a third of the primary's calls whatever the load:
//     at most 38 % of the calls to the fallback with the default policies
//     and with the throttle, and at most 10 % shed in the 30 s after it;
//   - refusing half: at most 55 % with the default policies;
//   - sustained exhaustion: the primary open by its 5th call, fresh or after
//     healthy traffic, and not called again before the 40 s hint passed.
func TestStormTargets(t *testing.T) {
	readme, err := os.ReadFile("../../samples/failover/README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := func(row string) {
		t.Helper()
		t.Log(row)
		if !strings.Contains(string(readme), row+"\n") {
			t.Errorf("README.md does not show the row as the run prints it:\n%s", row)
		}
	}
	for _, tc := range []struct {
		share    float64
		throttle bool
		max      float64
	}{{1.0 / 3, false, 0.38}, {1.0 / 3, true, 0.38}, {0.5, false, 0.55}} {
		r, err := measureStorm(t.Context(), loadIndependent, tc.share, tc.throttle, stormSeed(loadIndependent, tc.share, tc.throttle))
		if err != nil {
			t.Fatal(err)
		}
		shown(r.row())
		if got := r.storm.fallbackShare(); got > tc.max {
			t.Errorf("load-independent %.0f%% %s: %.1f%% of the calls to the fallback, want at most %.0f%%", 100*tc.share, onOff(tc.throttle), 100*got, 100*tc.max)
		}
		if got := r.after.shedShare(); got > 0.10 {
			t.Errorf("load-independent %.0f%% %s: %.1f%% shed in the 30 s after the storm, want at most 10%%", 100*tc.share, onOff(tc.throttle), 100*got)
		}
	}
	for i, before := range exhaustionBefore[:2] {
		r, err := measureExhaustion(t.Context(), before, false, stormSeed(2, float64(i), false))
		if err != nil {
			t.Fatal(err)
		}
		shown(r.row())
		if r.openedOnCall == 0 || r.openedOnCall > 5 || r.proHits > 5 {
			t.Errorf("sustained exhaustion after %s: open on call %d (%d reached the primary), want by the 5th", before, r.openedOnCall, r.proHits)
		}
		if r.held < exhaustedHint {
			t.Errorf("sustained exhaustion after %s: the primary was called again %s after it opened, before the %s hint", before, r.held, exhaustedHint)
		}
	}
}
