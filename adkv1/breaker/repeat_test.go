package breaker_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// repeating is a model that calls get_invoice with args(i) at its i-th
// call (from 0), calls calls at a time, forever.
func repeating(calls int, args func(i int) map[string]any) scripted.Step {
	i := 0
	return func(*model.LLMRequest) *model.LLMResponse {
		cs := make([]scripted.Call, calls)
		for j := range cs {
			cs[j] = scripted.Call{Name: "get_invoice", Args: args(i)}
		}
		i++
		return scripted.CallTools(cs...)
	}
}

// notes returns the repeated-call notes among the tool responses.
func notes(evs []*session.Event) []map[string]any {
	var out []map[string]any
	for _, r := range functionResponses(evs) {
		if r.Response["status"] == degrade.StatusRepeated {
			out = append(out, r.Response)
		}
	}
	return out
}

// TestRepeatGuardStopsARepeatedSuccessfulCall: a model that calls one
// healthy tool with the same arguments again and again gets, at the 3rd
// call (the default N), a note instead of the tool's answer; the 4th call
// ends the turn with a readable answer (reason repeated_call), counted in
// telemetry; the tool ran twice; nothing is left behind.
func TestRepeatGuardStopsARepeatedSuccessfulCall(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e := newEnv(t, repeating(1, func(int) map[string]any { return map[string]any{"id": "7"} }),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	evs := e.mustTurn("invoice 7")
	if got := e.backend.Hits(); got != 2 {
		t.Fatalf("backend hits = %d, want 2 (the 3rd call is answered by the guard)", got)
	}
	if e.llm.Calls() != 4 {
		t.Fatalf("LLM calls = %d, want 4 (the 5th is answered by the plugin)", e.llm.Calls())
	}
	ns := notes(evs)
	if len(ns) != 2 || ns[0]["turn_ended"] != false || ns[1]["turn_ended"] != true {
		t.Fatalf("notes = %v", ns)
	}
	if g, _ := ns[0]["guidance"].(string); !strings.Contains(g, "You already called get_invoice with these arguments twice") || !strings.Contains(g, "Do not call get_invoice again") {
		t.Fatalf("note guidance = %q", g)
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndRepeatedCall) {
		t.Fatalf("ended by %q, final %q", r, finalText(evs))
	}
	if final := finalText(evs); !strings.Contains(final, "kept repeating the same step (get_invoice") {
		t.Fatalf("final answer = %q", final)
	}
	m := metrics(t, reader)
	if m["adkbreaker.loop.repeats"]["action=note,dependency=billing-api,tool=get_invoice"] != 1 ||
		m["adkbreaker.loop.repeats"]["action=end_turn,dependency=billing-api,tool=get_invoice"] != 1 {
		t.Fatalf("loop.repeats = %v", m["adkbreaker.loop.repeats"])
	}
	if m["adkbreaker.turns_ended"]["reason=repeated_call"] != 1 {
		t.Fatalf("turns_ended = %v", m["adkbreaker.turns_ended"])
	}
	e.assertNoPending()
	// The next turn starts afresh: the same call runs again.
	before := e.backend.Hits()
	e.mustTurn("invoice 7 again")
	if got := e.backend.Hits() - before; got != 2 {
		t.Fatalf("backend hits in the next turn = %d, want 2", got)
	}
	e.assertNoPending()
}

// TestRepeatGuardIgnoresKeyOrderAndNumberForms: the same arguments written
// with their keys in another order and a number as 2 or 2.0 are the same
// call.
func TestRepeatGuardIgnoresKeyOrderAndNumberForms(t *testing.T) {
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		// Built from JSON each time, in different key orders.
		forms := []string{`{"id":"7","page":2}`, `{"page":2.0,"id":"7"}`, `{"page":2e0,"id":"7"}`, `{"id":"7","page":2}`}
		var args map[string]any
		if err := json.Unmarshal([]byte(forms[len(req.Contents)%len(forms)]), &args); err != nil {
			panic(err)
		}
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: args})
	})
	evs := e.mustTurn("invoice 7")
	// get_invoice declares only "id": its calls fail on "page", and the
	// failures count as repeats as successes do.
	if e.llm.Calls() != 4 || len(notes(evs)) != 2 || endedBy(evs) != string(callbacks.TurnEndRepeatedCall) {
		t.Fatalf("LLM calls = %d, notes %v, ended by %q", e.llm.Calls(), notes(evs), endedBy(evs))
	}
	e.assertNoPending()
}

// TestRepeatGuardCountsParallelDuplicates: three identical calls in one
// model response: two run, the third is answered with the note.
func TestRepeatGuardCountsParallelDuplicates(t *testing.T) {
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		if scripted.LastResponses(req) != nil {
			return scripted.Text("done")
		}
		return repeating(3, func(int) map[string]any { return map[string]any{"id": "7"} })(req)
	})
	evs := e.mustTurn("invoice 7, three times at once")
	if got := e.backend.Hits(); got != 2 {
		t.Fatalf("backend hits = %d, want 2", got)
	}
	if ns := notes(evs); len(ns) != 1 {
		t.Fatalf("notes = %v, want one", ns)
	}
	if finalText(evs) != "done" {
		t.Fatalf("final = %q", finalText(evs))
	}
	e.assertNoPending()
}

// TestRepeatGuardOptOutForAPollingTool: a tool opted out (in Go, or in the
// file for its dependency) is never stopped, however often it is called
// with the same arguments; the turn budget still bounds the turn.
func TestRepeatGuardOptOutForAPollingTool(t *testing.T) {
	f, err := config.Parse([]byte("version: 1\ndependencies:\n  billing-api:\n    tools: [get_invoice, list_invoices]\n    repeat_limit: -1\n"), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]breaker.Option{
		"tool option":     breaker.WithToolRepeatLimit("get_invoice", callbacks.NoRepeatLimit),
		"guard off":       breaker.WithRepeatLimit(callbacks.NoRepeatLimit),
		"file dependency": breaker.WithConfig(f),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, repeating(1, func(int) map[string]any { return map[string]any{"id": "poll"} }), opt, breaker.WithTurnBudget(8, 0))
			evs := e.mustTurn("poll")
			if got := e.backend.Hits(); got != 8 {
				t.Fatalf("backend hits = %d, want 8", got)
			}
			if ns := notes(evs); len(ns) != 0 || endedBy(evs) != string(callbacks.TurnEndModelCallBudget) {
				t.Fatalf("notes = %v, ended by %q", ns, endedBy(evs))
			}
			e.assertNoPending()
		})
	}
}

// TestRepeatGuardOwnLimit: a tool's own N, from the file.
func TestRepeatGuardOwnLimit(t *testing.T) {
	f, err := config.Parse([]byte("version: 1\ndefaults:\n  tool_repeat_limits:\n    get_invoice: 5\n"), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, repeating(1, func(int) map[string]any { return map[string]any{"id": "7"} }), breaker.WithConfig(f))
	evs := e.mustTurn("invoice 7")
	if got := e.backend.Hits(); got != 4 || endedBy(evs) != string(callbacks.TurnEndRepeatedCall) {
		t.Fatalf("backend hits = %d, want 4; ended by %q", got, endedBy(evs))
	}
	e.assertNoPending()
}

// TestRepeatGuardNoFalsePositive: calls whose arguments differ are never
// stopped: the turn budget ends the turn.
func TestRepeatGuardNoFalsePositive(t *testing.T) {
	e := newEnv(t, repeating(2, func(i int) map[string]any { return map[string]any{"id": strconv.Itoa(i)} }), breaker.WithTurnBudget(6, 0))
	evs := e.mustTurn("every page")
	// Two identical calls per response (under N), a new invoice each time.
	if got := e.backend.Hits(); got != 12 {
		t.Fatalf("backend hits = %d, want 12", got)
	}
	if ns := notes(evs); len(ns) != 0 || endedBy(evs) != string(callbacks.TurnEndModelCallBudget) {
		t.Fatalf("notes = %v, ended by %q", ns, endedBy(evs))
	}
	e.assertNoPending()
}

// TestRepeatGuardWhileOpen: calls short-circuited by an open breaker are
// the breaker's: the model that keeps calling the unavailable tool reads
// the unavailable payload every time (never the repeat note), and with H
// and K out of the way nothing else ends the turn early.
func TestRepeatGuardWhileOpen(t *testing.T) {
	e := newEnv(t, repeating(1, func(int) map[string]any { return map[string]any{"id": "7"} }), breaker.WithTurnLimit(8), breaker.WithShortCircuitLimit(100))
	if err := e.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	evs := e.mustTurn("invoice 7")
	if e.backend.Hits() != 0 || endedBy(evs) != string(callbacks.TurnEndShortCircuitBudget) {
		t.Fatalf("hits %d, ended by %q", e.backend.Hits(), endedBy(evs))
	}
	rs := functionResponses(evs)
	if len(rs) != 8 || len(notes(evs)) != 0 {
		t.Fatalf("responses = %v", rs)
	}
	for _, r := range rs {
		if r.Response["status"] != degrade.StatusUnavailable {
			t.Fatalf("response = %v, want the unavailable payload", r.Response)
		}
	}
	e.assertNoPending()
}

// TestRepeatGuardValidation: invalid limits fail at construction, each
// named, with every other problem; in the file too.
func TestRepeatGuardValidation(t *testing.T) {
	_, err := breaker.New(breaker.WithRepeatLimit(1), breaker.WithToolRepeatLimit("poll", -2), breaker.WithTurnLimit(-1))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"repeat_limit: must be -1 (off), 0 (inherit) or in [2, 65534], got 1", `tool_repeat_limits["poll"]: must be`, "turn_limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	_, err = config.Parse([]byte("version: 1\ndefaults:\n  repeat_limit: 1\n  tool_repeat_limits:\n    poll: -5\ndependencies:\n  a:\n    repeat_limit: 70000\n"), config.YAML)
	for _, want := range []string{"defaults.repeat_limit", "defaults.tool_repeat_limits.poll", "dependencies.a.repeat_limit"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file error lacks %q: %v", want, err)
		}
	}
}

// TestRepeatGuardInShadowModeOnlyCounts: for a dependency in shadow mode
// the guard changes nothing the model reads: every identical call runs, no
// note, the turn goes on to the model's own answer; what the guard would
// have done is counted (shadow_note, shadow_end_turn).
func TestRepeatGuardInShadowModeOnlyCounts(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	i := 0
	step := func(*model.LLMRequest) *model.LLMResponse {
		i++
		if i > 5 {
			return scripted.Text("done")
		}
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "7"}})
	}
	e := newEnv(t, step,
		breaker.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 3, Shadow: true}),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	evs := e.mustTurn("invoice 7")
	if got := e.backend.Hits(); got != 5 {
		t.Fatalf("backend hits = %d, want all 5 calls to run in shadow mode", got)
	}
	if ns := notes(evs); len(ns) != 0 {
		t.Fatalf("shadow mode sent notes to the model: %v", ns)
	}
	if final := finalText(evs); final != "done" {
		t.Fatalf("final answer = %q, want the model's own", final)
	}
	m := metrics(t, reader)["adkbreaker.loop.repeats"]
	if m["action=shadow_note,dependency=billing-api,tool=get_invoice"] != 1 ||
		m["action=shadow_end_turn,dependency=billing-api,tool=get_invoice"] != 2 {
		t.Fatalf("loop.repeats = %v", m)
	}
	e.assertNoPending()
}
