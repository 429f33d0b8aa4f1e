package breaker_test

import (
	"log"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"
)

// TestNoContextMisuseOnTheStandardLogger: through a whole outage on the
// real runner (failures, the trip, short-circuits, escalation, the probe,
// recovery), the plugin never calls a method a context does not support.
// ADK v2 gives every context every method and answers the wrong ones with
// a zero value and a line on the standard logger ("FunctionCallID() is not
// supported for callback context"): no such line may appear.
func TestNoContextMisuseOnTheStandardLogger(t *testing.T) {
	var buf logCapture
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(prev); log.SetFlags(flags) })

	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}))
	e.backend.SetMode(fakebackend.Down)
	for range 6 { // 3 failures trip it, then short-circuits
		e.mustTurn("invoice 42?")
	}
	if st := e.breaker("billing-api").State(); st != registry.StateOpen {
		t.Fatalf("state = %v, want open", st)
	}
	e.backend.SetMode(fakebackend.Up)
	e.clk.Advance(31 * time.Second)
	e.mustTurn("invoice 42?") // the probe closes it
	if st := e.breaker("billing-api").State(); st != registry.StateClosed {
		t.Fatalf("state = %v, want closed after the probe", st)
	}
	e.assertNoPending()
	if out := buf.text(); strings.Contains(out, "not supported for") {
		t.Errorf("the standard logger reports context misuse:\n%s", out)
	}
}

// TestAdmittedRefusesACallbackContextQuietly: a callback context handed to
// Registry.Admitted (which asks "is this a call the plugin admitted?") is
// answered false without calling its tool-only methods, on both ADK lines.
func TestAdmittedRefusesACallbackContextQuietly(t *testing.T) {
	var buf logCapture
	prev := log.Writer()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(prev) })

	reg := registry.MustNew()
	var asked, admitted int
	before := func(ctx agent.CallbackContext, _ *model.LLMRequest) (*model.LLMResponse, error) {
		asked++
		if reg.Admitted(ctx, "billing-api") {
			admitted++
		}
		return nil, nil
	}
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: scripted.New("m", func(*model.LLMRequest) *model.LLMResponse { return scripted.Text("hi") }),
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{before}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := breaker.New(breaker.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "q", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("hello", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if asked != 1 || admitted != 0 {
		t.Fatalf("asked %d, admitted %d: want 1 and 0", asked, admitted)
	}
	if out := buf.text(); strings.Contains(out, "not supported for") {
		t.Errorf("the standard logger reports context misuse:\n%s", out)
	}
}
