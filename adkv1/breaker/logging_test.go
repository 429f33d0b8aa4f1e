package breaker_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/adk/session"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
)

// logCapture is a JSON slog handler's output, safe for the registry's
// delivery goroutine and the test to share.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// text is everything written so far.
func (c *logCapture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (c *logCapture) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns the captured records whose message is msg.
func (c *logCapture) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(c.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func invocationOf(evs []*session.Event) string {
	for _, ev := range evs {
		if ev.InvocationID != "" {
			return ev.InvocationID
		}
	}
	return ""
}

// callUntilAnswered calls get_invoice, and again whenever it gets the
// unavailable payload; any other result ends the turn with text.
func callUntilAnswered(req *model.LLMRequest) *model.LLMResponse {
	if rs := scripted.LastResponses(req); rs != nil {
		if _, ok := degrade.Parse(rs[0].Response); !ok {
			return scripted.Text("noted")
		}
	}
	return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}})
}

// wantLine checks one record's level and attributes.
func wantLine(t *testing.T, rec map[string]any, level string, attrs map[string]any) {
	t.Helper()
	if rec["level"] != level {
		t.Errorf("%s: level %v, want %s", rec["msg"], rec["level"], level)
	}
	for k, v := range attrs {
		if rec[k] != v {
			t.Errorf("%s: %s = %v, want %v (%v)", rec["msg"], k, rec[k], v, rec)
		}
	}
}

// TestBreakerLogThroughRunner: through the real runner, with nothing
// installed but a logger, the cut reaches a person: the trip is a WARN line
// with the dependency, cause and hold; the runs it cuts are named
// (invocation ID) on the short-circuit and ended-turn lines; the recovery
// is logged at INFO.
func TestBreakerLogThroughRunner(t *testing.T) {
	var c logCapture
	e := newEnv(t, callUntilAnswered, breaker.WithLogger(c.logger()), breaker.WithTurnLimit(2))
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("trip it")
	}
	cut := invocationOf(e.mustTurn("cut")) // two short-circuits, then the plugin ends the turn
	if err := e.reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	opened := c.lines(t, "adkbreaker: breaker opened")
	if len(opened) != 1 {
		t.Fatalf("%d opened lines, want 1", len(opened))
	}
	wantLine(t, opened[0], "WARN", map[string]any{"dependency": "billing-api", "from": "closed", "to": "open", "cause": "trip", "hold": float64(30 * time.Second)})
	sc := c.lines(t, "adkbreaker: call short-circuited")
	if len(sc) != 1 {
		t.Fatalf("%d short-circuit lines, want 1 (the first of the run)", len(sc))
	}
	wantLine(t, sc[0], "INFO", map[string]any{"invocation_id": cut, "dependency": "billing-api", "tool": "get_invoice", "reason": "circuit_open"})
	ended := c.lines(t, "adkbreaker: turn ended without the model")
	if len(ended) != 1 {
		t.Fatalf("%d turn-ended lines, want 1", len(ended))
	}
	wantLine(t, ended[0], "WARN", map[string]any{"invocation_id": cut, "reason": "short_circuit_budget", "turn_total": float64(2)})

	e.clk.Advance(30 * time.Second)
	e.backend.SetMode(fakebackend.Up)
	e.mustTurn("recover")
	if err := e.reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l := c.lines(t, "adkbreaker: breaker half-open"); len(l) != 1 {
		t.Fatalf("%d half-open lines, want 1", len(l))
	} else {
		wantLine(t, l[0], "INFO", map[string]any{"dependency": "billing-api", "from": "open", "to": "half_open", "cause": "hold_expired"})
	}
	if l := c.lines(t, "adkbreaker: breaker closed"); len(l) != 1 {
		t.Fatalf("%d closed lines, want 1", len(l))
	} else {
		wantLine(t, l[0], "INFO", map[string]any{"dependency": "billing-api", "from": "half_open", "to": "closed", "cause": "probe_succeeded"})
	}
	e.assertNoPending()
}

// TestWithoutBreakerLog: the option silences the breaker lines.
func TestWithoutBreakerLog(t *testing.T) {
	var c logCapture
	e := newEnv(t, callUntilAnswered, breaker.WithLogger(c.logger()), breaker.WithoutBreakerLog())
	e.backend.SetMode(fakebackend.Down)
	for range 4 {
		e.mustTurn("x")
	}
	if err := e.reg.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf.Len() != 0 {
		t.Fatalf("logged with WithoutBreakerLog:\n%s", c.buf.String())
	}
}

// TestUnprotectedLineNamesTheRun: a tool whose breaker cannot be created
// (registry full) runs unprotected, and the warning names the run.
func TestUnprotectedLineNamesTheRun(t *testing.T) {
	var c logCapture
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}), breaker.WithLogger(c.logger()), breaker.WithMaxBreakers(1))
	if err := e.reg.Isolate("other"); err != nil {
		t.Fatal(err)
	}
	inv := invocationOf(e.mustTurn("x"))
	l := c.lines(t, "adkbreaker: dependency left unprotected")
	if len(l) != 1 {
		t.Fatalf("%d unprotected lines, want 1", len(l))
	}
	wantLine(t, l[0], "WARN", map[string]any{"invocation_id": inv, "dependency": "billing-api"})
	if _, ok := e.reg.Lookup("billing-api"); ok {
		t.Fatal("a breaker was created past the cap")
	}
}
