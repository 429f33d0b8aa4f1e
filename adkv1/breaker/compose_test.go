package breaker_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/plugin/retryandreflect"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
)

// One answer per call (docs/design.md): the tests below pin which guard
// answers a call that more than one would answer.

// openBillingAPI trips billing-api in env e with three failing calls of
// distinct arguments (a turn of their own), and leaves the backend down.
func openBillingAPI(t *testing.T, e *switchEnv) {
	t.Helper()
	e.backend.SetMode(fakebackend.Down)
	for i := range 3 {
		e.llmStep = callOnce("get_invoice", map[string]any{"id": string(rune('a' + i))})
		e.mustTurn("warm up")
	}
	if b := e.breaker("billing-api"); b.State() != registry.StateOpen {
		t.Fatalf("billing-api is %v after three failures, want open", b.State())
	}
}

// stubborn calls get_invoice(id) at every step, forever.
func stubborn(id string) scripted.Step {
	return func(*model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": id}})
	}
}

// TestStubbornModelReadsUnavailableUntilH: a model calling one tool with
// the same arguments while its dependency is open reads the unavailable
// payload, with its dependency and retry time, at every call — never the
// repeat note — from the K-th on with terminal guidance, until the H-th
// short-circuit ends the turn with the plugin's answer naming the
// dependency and when to retry.
func TestStubbornModelReadsUnavailableUntilH(t *testing.T) {
	e := newSwitchEnv(t)
	openBillingAPI(t, e)
	e.llmStep = stubborn("7")
	calls := e.llm.Calls()
	evs := e.mustTurn("invoice 7")
	rs := functionResponses(evs)
	if len(rs) != callbacks.DefaultTurnLimit {
		t.Fatalf("%d tool responses, want H = %d: %v", len(rs), callbacks.DefaultTurnLimit, rs)
	}
	for i, r := range rs {
		info, ok := degrade.Parse(r.Response)
		if !ok || info.Dependency != "billing-api" || info.RetryAfterSeconds < 1 || info.ThisTurn != i+1 {
			t.Fatalf("response %d = %v, want the unavailable payload (billing-api, retry_after, this_turn %d)", i+1, r.Response, i+1)
		}
		if info.Terminal != (i+1 >= callbacks.DefaultShortCircuitLimit) {
			t.Fatalf("response %d terminal = %v", i+1, info.Terminal)
		}
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndShortCircuitBudget) {
		t.Fatalf("ended by %q, want %q", r, callbacks.TurnEndShortCircuitBudget)
	}
	if final := finalText(evs); !strings.Contains(final, "billing-api") || !strings.Contains(final, "try again in about 30 seconds") {
		t.Fatalf("final answer = %q", final)
	}
	if got := e.llm.Calls() - calls; got != callbacks.DefaultTurnLimit {
		t.Fatalf("LLM calls = %d, want %d", got, callbacks.DefaultTurnLimit)
	}
	e.assertNoPending()
}

// TestShortCircuitLimitAboveRepeatLimit: with K (4) ≥ N (3) the firmer,
// terminal guidance still arrives on identical calls to an open
// dependency: the repeat guard does not answer them.
func TestShortCircuitLimitAboveRepeatLimit(t *testing.T) {
	e := newSwitchEnv(t, breaker.WithShortCircuitLimit(4), breaker.WithTurnLimit(6))
	openBillingAPI(t, e)
	e.llmStep = stubborn("7")
	rs := functionResponses(e.mustTurn("invoice 7"))
	if len(rs) != 6 {
		t.Fatalf("%d tool responses, want 6", len(rs))
	}
	info, ok := degrade.Parse(rs[3].Response)
	if !ok || !info.Terminal || info.ThisTurn != 4 {
		t.Fatalf("4th response = %v, want terminal guidance", rs[3].Response)
	}
	if g, _ := rs[3].Response["guidance"].(string); !strings.Contains(g, "Do not call get_invoice again in this turn") {
		t.Fatalf("4th guidance = %q", g)
	}
	e.assertNoPending()
}

// TestRetryOfAFailingCallReachesTheBreaker: with ADK's retryandreflect
// registered after adkbreaker (as documented), a model retrying a failing
// call with the same arguments is not stopped by the repeat guard: the
// breaker sees its threshold's 3 failures within the turn, opens, and the
// retries then read the unavailable payload until H ends the turn.
func TestRetryOfAFailingCallReachesTheBreaker(t *testing.T) {
	e := newSwitchEnv(t)
	e.usePlugins(retryandreflect.MustNew(retryandreflect.WithMaxRetries(100)))
	e.backend.SetMode(fakebackend.Down)
	e.llmStep = stubborn("7")
	evs := e.mustTurn("invoice 7")
	if got := e.backend.Hits(); got != 3 {
		t.Fatalf("backend hits = %d, want the breaker's threshold, 3", got)
	}
	if st := e.breaker("billing-api").State(); st != registry.StateOpen {
		t.Fatalf("billing-api is %v, want open", st)
	}
	rs := functionResponses(evs)
	if len(notes(evs)) != 0 {
		t.Fatalf("the repeat guard answered a retry of a failing call: %v", rs)
	}
	if len(rs) != 3+callbacks.DefaultTurnLimit {
		t.Fatalf("%d tool responses, want 3 failures and %d short-circuits: %v", len(rs), callbacks.DefaultTurnLimit, rs)
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndShortCircuitBudget) {
		t.Fatalf("ended by %q", r)
	}
	e.assertNoPending()
}

// TestRepeatEndDuringAnOutage: the repeat guard ends a turn in which a
// dependency was unavailable: the note to the model does not invite
// another call with other arguments, and the user's answer names the
// dependency and when to retry.
func TestRepeatEndDuringAnOutage(t *testing.T) {
	e := newSwitchEnv(t)
	openBillingAPI(t, e)
	step := 0
	e.llmStep = func(*model.LLMRequest) *model.LLMResponse {
		step++
		if step == 2 {
			// The hold has passed and the backend is back: get_invoice(7)
			// is the probe, and it closes the breaker.
			e.clk.Advance(31 * time.Second)
			e.backend.SetMode(fakebackend.Up)
		}
		id := "7"
		if step == 1 {
			id = "1" // refused: billing-api is open
		}
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": id}})
	}
	evs := e.mustTurn("invoice 7")
	ns := notes(evs)
	if len(ns) != 2 {
		t.Fatalf("notes = %v, want two", ns)
	}
	if g, _ := ns[0]["guidance"].(string); strings.Contains(g, "change the arguments") || !strings.Contains(g, "Do not call get_invoice again in this turn") {
		t.Fatalf("note guidance = %q: it invites another call", g)
	}
	if r := endedBy(evs); r != string(callbacks.TurnEndRepeatedCall) {
		t.Fatalf("ended by %q", r)
	}
	if final := finalText(evs); !strings.Contains(final, "billing-api was temporarily unavailable") || !strings.Contains(final, "Please try again in about") {
		t.Fatalf("final answer = %q", final)
	}
	e.assertNoPending()
}

// switchEnv is env whose model step can be switched between turns
// (llmStep) and whose runner can take more plugins after adkbreaker.
type switchEnv struct {
	*env
	llmStep scripted.Step
	plugin  *adkplugin.Plugin
}

func newSwitchEnv(t *testing.T, opts ...breaker.Option) *switchEnv {
	t.Helper()
	s := &switchEnv{}
	s.env = newEnv(t, func(req *model.LLMRequest) *model.LLMResponse { return s.llmStep(req) }, opts...)
	p, err := breaker.FromHandler(s.h, "")
	if err != nil {
		t.Fatal(err)
	}
	s.plugin = p
	return s
}

// usePlugins rebuilds the runner with adkbreaker first, then more.
func (s *switchEnv) usePlugins(more ...*adkplugin.Plugin) {
	s.t.Helper()
	tools := invoiceTools(s.t, func(ctx agent.ToolContext, path string) (map[string]any, error) {
		return getInvoice(ctx, s.backend, path)
	})
	a, err := llmagent.New(llmagent.Config{Name: "billing_agent", Model: s.llm, Tools: tools})
	if err != nil {
		s.t.Fatal(err)
	}
	s.r, err = runner.New(runner.Config{AppName: "e2e", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: append([]*adkplugin.Plugin{s.plugin}, more...)}})
	if err != nil {
		s.t.Fatal(err)
	}
}

// TestTurnBudgetBelowCallTimeoutIsRefused: a turn budget in time that is
// not above a dependency's call timeout would hide an outage (the turn's
// deadline cuts every call of a hanging dependency first, the cut is
// excluded, the breaker never opens): it is refused at construction, in
// Go and in the file, naming the dependency.
func TestTurnBudgetBelowCallTimeoutIsRefused(t *testing.T) {
	_, err := breaker.New(breaker.WithDependency("slow-api", "fetch"),
		breaker.WithPolicy("slow-api", registry.Policy{CallTimeout: 30 * time.Second}),
		breaker.WithTurnBudget(0, 2*time.Second))
	if err == nil || !strings.Contains(err.Error(), "max_turn_duration") || !strings.Contains(err.Error(), `"slow-api"`) {
		t.Fatalf("err = %v, want the turn budget refused for slow-api", err)
	}
	_, err = breaker.New(breaker.WithDefaultPolicy(registry.Policy{CallTimeout: 5 * time.Second}), breaker.WithTurnBudget(0, 5*time.Second))
	if err == nil || !strings.Contains(err.Error(), "the default policy") {
		t.Fatalf("err = %v, want the turn budget refused for the default policy", err)
	}
	f, err := config.Parse([]byte("version: 1\ndefaults:\n  max_turn_duration: 2s\ndependencies:\n  slow-api:\n    tools: [fetch]\n    policy:\n      call_timeout: 30s\n"), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := breaker.New(breaker.WithConfig(f)); err == nil || !strings.Contains(err.Error(), "max_turn_duration") {
		t.Fatalf("file: err = %v, want the turn budget refused", err)
	}
	// Below the turn budget is fine.
	if _, err := breaker.New(breaker.WithDependency("slow-api", "fetch"),
		breaker.WithPolicy("slow-api", registry.Policy{CallTimeout: time.Second}), breaker.WithTurnBudget(0, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
}
