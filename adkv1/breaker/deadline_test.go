package breaker_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/session"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// turnEvents runs one turn of a and returns its events.
func (a *toolAgent) turnEvents() []*session.Event {
	a.t.Helper()
	var evs []*session.Event
	for ev, err := range a.r.Run(a.t.Context(), "u", "deadline", genai.NewContentFromText("x", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			a.t.Fatalf("turn: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestTurnDeadlineCutsARunningCall: a guarded tool call still running when
// the turn's time (max_turn_duration) is up is cancelled at that moment,
// its context carrying the turn's deadline; it is excluded, never charged
// to the dependency; the model reads the turn-deadline note and the turn
// ends with the turn budget's answer (virtual time: no sleep). A shorter
// call timeout still counts as the dependency's failure (one not below the
// turn is refused at construction: TestTurnBudgetBelowCallTimeoutIsRefused).
func TestTurnDeadlineCutsARunningCall(t *testing.T) {
	for _, c := range []struct {
		name        string
		callTimeout time.Duration
		took        time.Duration
		failures    uint32
	}{
		{"no call timeout", 0, 10 * time.Second, 0},
		{"shorter call timeout", 4 * time.Second, 4 * time.Second, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := newToolAgent(t, toolAgentSetup{systemClock: true}, breaker.WithTurnBudget(0, 10*time.Second),
					breaker.WithPolicy("lookup-api", registry.Policy{ConsecutiveFailures: 1, DisableFailureRate: true, CallTimeout: c.callTimeout, OpenFor: time.Minute}))
				a.mode.Store(toolHang)
				start := time.Now()
				evs := a.turnEvents()
				if el := time.Since(start); el != c.took {
					t.Fatalf("the turn took %v, want %v", el, c.took)
				}
				counts := a.breaker().Counts()
				if counts.Trips != uint64(c.failures) { // one failure trips the breaker
					t.Fatalf("counts %+v, want %d failures", counts, c.failures)
				}
				rs := functionResponses(evs)
				if len(rs) != 1 {
					t.Fatalf("tool responses = %v", rs)
				}
				if c.failures == 0 {
					if d := a.seenDeadline.Load(); d == nil || !d.Equal(start.Add(10*time.Second)) {
						t.Fatalf("tool's deadline = %v, want the turn's, start+10s", d)
					}
					if counts.Exclusions != 1 || a.breaker().State() != registry.StateClosed {
						t.Fatalf("counts %+v, state %v: want the cut call excluded, closed", counts, a.breaker().State())
					}
					if rs[0].Response["status"] != degrade.StatusTurnDeadline {
						t.Fatalf("tool response = %v", rs[0].Response)
					}
					if r := endedBy(evs); r != string(callbacks.TurnEndTimeBudget) || !strings.Contains(finalText(evs), "time allowed") {
						t.Fatalf("ended by %q: %q", r, finalText(evs))
					}
				}
				if tk, inv := a.h.Pending(); tk != 0 || inv != 0 {
					t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
				}
			})
		})
	}
}
