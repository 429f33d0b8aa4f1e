package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/agent/workflowagents/loopagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// invoiceArgs are the arguments of the billing tools.
type invoiceArgs struct {
	ID string `json:"id"`
}

// env is one agent wired to a loopback billing backend through two tools
// that share the "billing-api" dependency, with the plugin registered first.
type env struct {
	t       *testing.T
	clk     *registrytest.FakeClock
	backend *fakebackend.Server
	h       *callbacks.Handler
	reg     *registry.Registry
	llm     *scripted.Model
	r       *runner.Runner
	runs    atomic.Int64
	// block, when set, makes tools signal started and wait for their
	// context to end.
	block   atomic.Bool
	started chan struct{}
}

func newEnv(t *testing.T, step scripted.Step, opts ...breaker.Option) *env {
	t.Helper()
	e := &env{t: t, clk: registrytest.NewFakeClock(time.Unix(1_700_000_000, 0)), backend: fakebackend.New(), started: make(chan struct{}, 64)}
	t.Cleanup(e.backend.Close)
	base := []breaker.Option{
		breaker.WithClock(e.clk),
		breaker.WithDependency("billing-api", "get_invoice", "list_invoices"),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true}),
	}
	h, err := breaker.NewHandler(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.h, e.reg = h, h.Registry()
	p, err := breaker.FromHandler(h, "")
	if err != nil {
		t.Fatal(err)
	}
	e.llm = scripted.New("scripted", step)
	e.useTools(p, invoiceTools(t, func(ctx agent.ToolContext, path string) (map[string]any, error) {
		if e.block.Load() {
			e.started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return getInvoice(ctx, e.backend, path)
	})...)
	return e
}

// useTools (re)builds the agent with tools and its runner with plugin p.
func (e *env) useTools(p *adkplugin.Plugin, tools ...tool.Tool) {
	e.t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "billing_agent", Model: e.llm, Tools: tools})
	if err != nil {
		e.t.Fatal(err)
	}
	e.r, err = runner.New(runner.Config{AppName: "e2e", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		e.t.Fatal(err)
	}
}

// turn runs one user turn and returns its events (and the first error).
func (e *env) turn(ctx context.Context, text string) ([]*session.Event, error) {
	n := e.runs.Add(1)
	var evs []*session.Event
	var first error
	for ev, err := range e.r.Run(ctx, "u", fmt.Sprintf("s%d", n), genai.NewContentFromText(text, genai.RoleUser), agent.RunConfig{}) {
		if err != nil && first == nil {
			first = err
		}
		if ev != nil {
			evs = append(evs, ev)
		}
	}
	return evs, first
}

func (e *env) mustTurn(text string) []*session.Event {
	e.t.Helper()
	evs, err := e.turn(e.t.Context(), text)
	if err != nil {
		e.t.Fatalf("turn %q: %v", text, err)
	}
	return evs
}

func (e *env) breaker(key registry.Key) *registry.Breaker {
	b, ok := e.reg.Lookup(key)
	if !ok {
		e.t.Fatalf("no breaker %q", key)
	}
	return b
}

func (e *env) assertNoPending() {
	e.t.Helper()
	if tk, inv := e.h.Pending(); tk != 0 || inv != 0 {
		e.t.Fatalf("per-invocation state left behind: %d tickets, %d invocations", tk, inv)
	}
}

// functionResponses returns every tool response in the events, in order.
func functionResponses(evs []*session.Event) []*genai.FunctionResponse {
	var out []*genai.FunctionResponse
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				out = append(out, p.FunctionResponse)
			}
		}
	}
	return out
}

func finalText(evs []*session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if c := evs[i].Content; c != nil && c.Role == genai.RoleModel {
			var b strings.Builder
			for _, p := range c.Parts {
				b.WriteString(p.Text)
			}
			if b.Len() > 0 {
				return b.String()
			}
		}
	}
	return ""
}

// callOnce calls one tool, then answers with what it got.
func callOnce(name string, args map[string]any) scripted.Step {
	return func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text(fmt.Sprintf("done: %v", rs[0].Response))
		}
		return scripted.CallTools(scripted.Call{Name: name, Args: args})
	}
}

// TestTripStopsCallingTheBackend: after the trip threshold the backend's hit
// counter stops rising while the model keeps receiving the unavailable payload.
func TestTripStopsCallingTheBackend(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}))
	e.backend.SetMode(fakebackend.Down)
	for i := range 3 {
		evs := e.mustTurn("invoice 42?")
		rs := functionResponses(evs)
		if len(rs) != 1 || rs[0].Response["error"] == nil {
			t.Fatalf("turn %d: want the tool's own error, got %v", i, rs)
		}
	}
	if got := e.backend.Hits(); got != 3 {
		t.Fatalf("hits after 3 failing turns = %d, want 3", got)
	}
	if st := e.breaker("billing-api").State(); st != registry.StateOpen {
		t.Fatalf("state = %v, want open", st)
	}
	for i := range 10 {
		evs := e.mustTurn("invoice 42?")
		rs := functionResponses(evs)
		if len(rs) != 1 {
			t.Fatalf("turn %d: %d responses", i, len(rs))
		}
		info, ok := degrade.Parse(rs[0].Response)
		if !ok {
			t.Fatalf("turn %d: not an unavailable payload: %v", i, rs[0].Response)
		}
		if info.Dependency != "billing-api" || info.Tool != "get_invoice" || info.Reason != degrade.ReasonCircuitOpen {
			t.Fatalf("payload = %+v", info)
		}
		if info.RetryAfterSeconds != 30 {
			t.Fatalf("retry_after_seconds = %d, want 30 (from the breaker's hold)", info.RetryAfterSeconds)
		}
	}
	if got := e.backend.Hits(); got != 3 {
		t.Fatalf("hits rose to %d while open", got)
	}
	e.assertNoPending()
}

// TestToolsOnOneDependencyTripTogether: failures through one tool open the
// breaker the other tool shares.
func TestToolsOnOneDependencyTripTogether(t *testing.T) {
	var next atomic.Value
	next.Store("get_invoice")
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text("ok")
		}
		name := next.Load().(string)
		args := map[string]any{}
		if name == "get_invoice" {
			args["id"] = "7"
		}
		return scripted.CallTools(scripted.Call{Name: name, Args: args})
	})
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("go")
	}
	next.Store("list_invoices")
	evs := e.mustTurn("list them")
	info, ok := degrade.Parse(functionResponses(evs)[0].Response)
	if !ok || info.Tool != "list_invoices" || info.Dependency != "billing-api" {
		t.Fatalf("list_invoices not short-circuited: %+v %v", info, ok)
	}
	if e.backend.Hits() != 3 {
		t.Fatalf("hits = %d, want 3", e.backend.Hits())
	}
	if e.reg.Len() != 1 {
		t.Fatalf("breakers = %d, want one shared breaker", e.reg.Len())
	}
}

// TestValidationErrorsAndCancellationNeverTrip: argument errors, 404s and
// caller cancellation are excluded, not failures.
func TestValidationErrorsAndCancellationNeverTrip(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": 12345})) // id must be a string
	for range 10 {
		e.mustTurn("bad args")
	}
	if e.backend.Hits() != 0 {
		t.Fatalf("validation failures reached the backend")
	}
	b := e.breaker("billing-api")
	if st := b.State(); st != registry.StateClosed {
		t.Fatalf("validation errors tripped the breaker: %v", st)
	}

	e2 := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}))
	e2.backend.SetMode(fakebackend.NotFound)
	for range 10 {
		e2.mustTurn("missing invoice")
	}
	if st := e2.breaker("billing-api").State(); st != registry.StateClosed {
		t.Fatalf("404s tripped the breaker: %v", st)
	}

	e3 := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}))
	e3.block.Store(true)
	for range 10 {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-e3.started // the tool is running and blocks on ctx
			cancel()
		}()
		_, _ = e3.turn(ctx, "cancel me")
		cancel()
	}
	b3 := e3.breaker("billing-api")
	if st := b3.State(); st != registry.StateClosed {
		t.Fatalf("caller cancellations tripped the breaker: %v", st)
	}
	if c := b3.Counts(); c.Failures != 0 || c.Exclusions != 10 {
		t.Fatalf("counts after cancellations = %+v, want 10 exclusions", c)
	}
	e3.assertNoPending()
}

// TestParallelCallsAreEachCounted: 8 calls in one model response.
func TestParallelCallsAreEachCounted(t *testing.T) {
	const n = 8
	step := fanOut(n, invoice)
	// Failing backend, high threshold: all 8 failures are counted.
	e := newEnv(t, step, breaker.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 100, DisableFailureRate: true}))
	e.backend.SetMode(fakebackend.Down)
	e.mustTurn("eight at once")
	if c := e.breaker("billing-api").Counts(); c.Failures != n {
		t.Fatalf("failures counted = %d, want %d", c.Failures, n)
	}
	// Open breaker: 8 short-circuits in one invocation, numbered 1..8.
	e2 := newEnv(t, step, breaker.WithTurnLimit(100))
	if err := e2.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	evs := e2.mustTurn("eight at once")
	seen := map[int]bool{}
	for _, r := range functionResponses(evs) {
		info, ok := degrade.Parse(r.Response)
		if !ok {
			t.Fatalf("not a payload: %v", r.Response)
		}
		seen[info.ThisTurn] = true
	}
	for i := 1; i <= n; i++ {
		if !seen[i] {
			t.Fatalf("short-circuit counts %v: missing %d", seen, i)
		}
	}
	if e2.backend.Hits() != 0 {
		t.Fatal("isolated dependency was called")
	}
	e.assertNoPending()
	e2.assertNoPending()
}

// TestRecoveryClosesWithOneProbe: after the hold, exactly one call reaches the
// backend and its success closes the breaker.
func TestRecoveryClosesWithOneProbe(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "9"}))
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("x")
	}
	e.backend.SetMode(fakebackend.Up)
	e.mustTurn("still open")
	if e.backend.Hits() != 3 {
		t.Fatalf("hits = %d before the hold expired", e.backend.Hits())
	}
	e.clk.Advance(30 * time.Second)
	evs := e.mustTurn("probe")
	if e.backend.Hits() != 4 {
		t.Fatalf("hits = %d, want exactly one probe", e.backend.Hits())
	}
	if rs := functionResponses(evs); rs[0].Response["status"] != "paid" {
		t.Fatalf("probe result = %v", rs[0].Response)
	}
	if st := e.breaker("billing-api").State(); st != registry.StateClosed {
		t.Fatalf("state after successful probe = %v", st)
	}
	e.mustTurn("normal again")
	if e.backend.Hits() != 5 {
		t.Fatalf("hits = %d after recovery", e.backend.Hits())
	}
	e.assertNoPending()
}

// TestHalfOpenAdmitsOneProbeAmongParallelCalls: 8 parallel calls when the
// hold expires: one probe, seven short-circuits with reason half_open_busy.
// The backend holds the probe until the other seven were refused (otherwise a
// fast probe could close the breaker before they arrive, and they would be
// admitted legitimately).
func TestHalfOpenAdmitsOneProbeAmongParallelCalls(t *testing.T) {
	step := fanOut(8, invoice)
	gate := make(chan struct{})
	obs := &gateObserver{after: 7, gate: gate}
	e := newEnv(t, step, breaker.WithTurnLimit(100), breaker.WithObserver(obs))
	e.backend.SetMode(fakebackend.Down)
	e.mustTurn("trip") // 8 failures ≥ 3: open
	hits := e.backend.Hits()
	obs.count.Store(0)
	e.backend.SetMode(fakebackend.Up)
	e.backend.SetGate(gate)
	e.clk.Advance(30 * time.Second)
	evs := e.mustTurn("probe")
	if got := e.backend.Hits() - hits; got != 1 {
		t.Fatalf("%d calls reached the backend in half-open, want 1", got)
	}
	busy := 0
	for _, r := range functionResponses(evs) {
		if info, ok := degrade.Parse(r.Response); ok && info.Reason == degrade.ReasonHalfOpenBusy {
			busy++
		}
	}
	if busy != 7 {
		t.Fatalf("half_open_busy payloads = %d, want 7", busy)
	}
	if st := e.breaker("billing-api").State(); st != registry.StateClosed {
		t.Fatalf("state after the probe succeeded = %v", st)
	}
}

// gateObserver opens gate after `after` short-circuits.
type gateObserver struct {
	after int64
	count atomic.Int64
	gate  chan struct{}
	once  sync.Once
}

func (o *gateObserver) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) {
	if o.count.Add(1) == o.after {
		o.once.Do(func() { close(o.gate) })
	}
}
func (o *gateObserver) TurnEnded(context.Context, callbacks.TurnEndEvent) {}

// TestEscalationEndsTheTurn: a model that keeps calling a dead tool gets
// terminal guidance from the K-th short-circuit and the turn ends after H,
// with a final answer, not an error.
func TestEscalationEndsTheTurn(t *testing.T) {
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": strconv.Itoa(len(req.Contents))}}) // another invoice each time: no repeat
	})
	if err := e.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	evs := e.mustTurn("keep trying")
	rs := functionResponses(evs)
	if len(rs) != 5 {
		t.Fatalf("short-circuits = %d, want H=5", len(rs))
	}
	for i, r := range rs {
		info, _ := degrade.Parse(r.Response)
		if wantTerminal := i+1 >= 2; info.Terminal != wantTerminal {
			t.Fatalf("short-circuit %d terminal=%v", i+1, info.Terminal)
		}
	}
	if calls := e.llm.Calls(); calls != 5 {
		t.Fatalf("LLM calls = %d, want 5 (the 6th step is answered by the plugin)", calls)
	}
	final := finalText(evs)
	if !strings.Contains(final, "billing-api") {
		t.Fatalf("final answer does not name the dependency: %q", final)
	}
	e.assertNoPending()
}

// TestOpenToolIsMarkedInTheRequest: the model is told before it tries.
func TestOpenToolIsMarkedInTheRequest(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}))
	if err := e.reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	// First turn binds the tools (BeforeTool); the next request is annotated.
	e.mustTurn("one")
	reqs := e.llm.Requests()
	desc, ok := scripted.ToolDescription(reqs[len(reqs)-1], "get_invoice")
	if !ok || !strings.HasPrefix(desc, "[UNAVAILABLE") {
		t.Fatalf("declaration not marked: %q", desc)
	}
	e2 := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}), breaker.WithRemoveUnavailable())
	_ = e2.reg.Isolate("billing-api")
	e2.mustTurn("one")
	reqs = e2.llm.Requests()
	last := reqs[len(reqs)-1]
	if _, ok := scripted.ToolDescription(last, "get_invoice"); ok {
		t.Fatal("unavailable tool still declared with WithRemoveUnavailable")
	}
	for _, gt := range last.Config.Tools { // both tools were removed: no empty tool is sent
		if gt == nil || (len(gt.FunctionDeclarations) == 0 && gt.GoogleSearch == nil && gt.CodeExecution == nil) {
			t.Fatalf("an empty tool is left in the request: %+v", last.Config.Tools)
		}
	}
}

// TestInventedToolNamesCreateNoBreakers: names the model makes up reach
// OnToolError but never create a breaker.
func TestInventedToolNamesCreateNoBreakers(t *testing.T) {
	const perTurn, turns = 100, 100
	var turn atomic.Int64
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text("ok")
		}
		k := turn.Add(1)
		calls := make([]scripted.Call, perTurn)
		for i := range calls {
			calls[i] = scripted.Call{Name: fmt.Sprintf("invented_%d_%d", k, i)}
		}
		return scripted.CallTools(calls...)
	})
	for range turns {
		e.mustTurn("hallucinate")
	}
	if n := e.reg.Len(); n != 0 {
		t.Fatalf("%d breakers created from %d invented names", n, perTurn*turns)
	}
	e.assertNoPending()
}

// TestRetryAfterHintIsAFloor: a 429 with Retry-After longer than the hold
// keeps the dependency open for the hint.
func TestRetryAfterHintIsAFloor(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}))
	e.backend.SetMode(fakebackend.RateLimited)
	e.backend.SetRetryAfter(90 * time.Second)
	for range 3 {
		e.mustTurn("x")
	}
	b := e.breaker("billing-api")
	if ra := b.RetryAfter(); ra != 90*time.Second {
		t.Fatalf("retry after = %v, want the 90s hint over the 30s hold", ra)
	}
	e.clk.Advance(31 * time.Second)
	if st := b.State(); st != registry.StateOpen {
		t.Fatalf("state after configured hold = %v, want still open", st)
	}
}

// TestAlternativesAndLastGood: per-dependency extras appear in the payload —
// configured alternatives, and the last good result for the same arguments
// with its age.
func TestAlternativesAndLastGood(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithDependencyOptions("billing-api", callbacks.Dependency{
			Alternatives: []string{"search_cached_invoices"}, CacheLastGood: true,
		}))
	e.mustTurn("fetch 42 while healthy")
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("fetch 42 while failing")
	}
	e.clk.Advance(7 * time.Second)
	evs := e.mustTurn("fetch 42 while open")
	resp := functionResponses(evs)[0].Response
	if _, ok := degrade.Parse(resp); !ok {
		t.Fatalf("not a payload: %v", resp)
	}
	// The payload is JSON-shaped: read as a user's callback reads decoded JSON.
	alts, _ := resp[degrade.KeyAlternatives].([]any)
	if len(alts) != 1 || alts[0] != "search_cached_invoices" {
		t.Fatalf("alternatives = %v", resp[degrade.KeyAlternatives])
	}
	lg, ok := resp[degrade.KeyLastGood].(map[string]any)
	if !ok {
		t.Fatalf("last_good missing: %#v", resp[degrade.KeyLastGood])
	}
	lgResult, _ := lg["result"].(map[string]any)
	if lgResult["invoice"] != "/invoices/42" || lg["age_seconds"] != 7.0 {
		t.Fatalf("last_good = %+v, want the healthy result, 7s old", lg)
	}
	lgResult["invoice"] = "tampered" // a callback changing the payload cannot change the cache
	evs = e.mustTurn("again")
	again, _ := functionResponses(evs)[0].Response[degrade.KeyLastGood].(map[string]any)
	if res, _ := again["result"].(map[string]any); res["invoice"] != "/invoices/42" {
		t.Fatalf("the cached result was changed through a payload: %v", again)
	}
	// Another user never gets this user's result.
	var other []*session.Event
	for ev, err := range e.r.Run(t.Context(), "someone-else", "s-other", genai.NewContentFromText("fetch 42", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		other = append(other, ev)
	}
	if _, leaked := functionResponses(other)[0].Response[degrade.KeyLastGood]; leaked {
		t.Fatal("another user's last good result was offered")
	}
}

// TestToolPanicCountsAsFailure: functiontool recovers a panic into an error;
// the breaker counts it as a failure.
func TestToolPanicCountsAsFailure(t *testing.T) {
	h, err := breaker.NewHandler(breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 2, DisableFailureRate: true}))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := breaker.FromHandler(h, "")
	boom, _ := functiontool.New(functiontool.Config{Name: "boom", Description: "panics"},
		func(agent.ToolContext, struct{}) (map[string]any, error) { panic("nil map write at 0xc000123456") })
	llm := scripted.New("s", callOnce("boom", nil))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: llm, Tools: []tool.Tool{boom}})
	r, _ := runner.New(runner.Config{AppName: "p", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	for i := range 2 {
		for _, err := range r.Run(t.Context(), "u", fmt.Sprint("s", i), genai.NewContentFromText("x", genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	b, _ := h.Registry().Lookup("boom")
	if c := b.Counts(); b.State() != registry.StateOpen || c.Trips != 1 {
		t.Fatalf("after two panics: state %v, counts %+v", b.State(), c)
	}
}

// TestPerDependencyClassifier: a dependency can decide that its 404s are
// failures (say, a gateway that answers 404 when its upstream is gone).
func TestPerDependencyClassifier(t *testing.T) {
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "1"}),
		breaker.WithDependencyOptions("billing-api", callbacks.Dependency{
			Classify: func(err error) (registry.Outcome, bool) {
				var se *callbacks.StatusError
				if errors.As(err, &se) && se.Code == http.StatusNotFound {
					return registry.Failure, true
				}
				return 0, false
			},
		}))
	e.backend.SetMode(fakebackend.NotFound)
	for range 3 {
		e.mustTurn("x")
	}
	if st := e.breaker("billing-api").State(); st != registry.StateOpen {
		t.Fatalf("state = %v, want open: the override counts 404 as a failure", st)
	}
}

// TestCallbacksOnAgentConfig: the callbacks work registered on one agent's
// llmagent.Config, without the plugin.
func TestCallbacksOnAgentConfig(t *testing.T) {
	reg := registry.MustNew()
	h, err := callbacks.New(callbacks.Config{Registry: reg, Mappings: []callbacks.Mapping{{Tools: []string{"get_*"}, Dependency: "billing-api"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Isolate("billing-api"); err != nil {
		t.Fatal(err)
	}
	calls := atomic.Int64{}
	getInvoice, _ := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "x"},
		func(agent.ToolContext, struct{}) (map[string]any, error) {
			calls.Add(1)
			return map[string]any{"ok": true}, nil
		})
	llm := scripted.New("s", callOnce("get_invoice", nil))
	a, err := llmagent.New(llmagent.Config{
		Name: "a", Model: llm, Tools: []tool.Tool{getInvoice},
		BeforeToolCallbacks:  []llmagent.BeforeToolCallback{h.BeforeTool},
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{h.OnToolError},
		AfterToolCallbacks:   []llmagent.AfterToolCallback{h.AfterTool},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{h.BeforeModel},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runner.New(runner.Config{AppName: "p", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	var evs []*session.Event
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("x", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	info, ok := degrade.Parse(functionResponses(evs)[0].Response)
	if !ok || info.Dependency != "billing-api" || calls.Load() != 0 {
		t.Fatalf("payload %+v ok=%v, tool calls %d", info, ok, calls.Load())
	}
}

// TestReusedCallIDsNeverCrossCalls: a model that reuses a call ID — for a
// real call and a name it invented, or for calls to two tools — cannot make
// one call report another's outcome.
func TestReusedCallIDsNeverCrossCalls(t *testing.T) {
	step := func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text("ok")
		}
		r := scripted.CallTools(
			scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}},
			scripted.Call{Name: "invented_tool"},
			scripted.Call{Name: "list_invoices"},
		)
		for _, p := range r.Content.Parts {
			p.FunctionCall.ID = "call_0" // the same ID for every call
		}
		return r
	}
	e := newEnv(t, step)
	for range 5 {
		e.mustTurn("x")
	}
	b := e.breaker("billing-api")
	if c := b.Counts(); b.State() != registry.StateClosed || c.Failures != 0 {
		t.Fatalf("a healthy dependency was charged with failures: %v %+v", b.State(), c)
	}
	e.assertNoPending()
}

// TestLoopAgentStopsAfterTheTurnEnded: when the short-circuit budget is spent
// inside a LoopAgent, the loop exits after the plugin's final answer instead
// of spinning on it (ADK's LoopAgent only stops on escalation).
func TestLoopAgentStopsAfterTheTurnEnded(t *testing.T) {
	h, err := breaker.NewHandler(breaker.WithTurnLimit(2))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Registry().Isolate("dead")
	p, _ := breaker.FromHandler(h, "")
	dead, _ := functiontool.New(functiontool.Config{Name: "dead", Description: "x"},
		func(agent.ToolContext, struct{}) (map[string]any, error) { return map[string]any{}, nil })
	llm := scripted.New("s", func(*model.LLMRequest) *model.LLMResponse {
		return scripted.CallTools(scripted.Call{Name: "dead"})
	})
	evs, err := runLoop(t, p, llm, dead)
	if err != nil && !errors.Is(err, callbacks.ErrTurnEnded) {
		t.Fatal(err)
	}
	if llm.Calls() != 2 {
		t.Fatalf("LLM calls = %d, want H=2", llm.Calls())
	}
	if !strings.Contains(finalText(evs), "dead") {
		t.Fatalf("the turn did not end with the plugin's answer: %q", finalText(evs))
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("state left: %d %d", tk, inv)
	}
}

// runLoop runs one turn of a LoopAgent (no iteration cap) around a worker
// agent with the given model and tools, with plugin p, and returns its
// events up to the first error, which it returns too: what a consumer that
// stops on errors sees. A loop that yields more than 100 events fails t.
func runLoop(t *testing.T, p *adkplugin.Plugin, llm model.LLM, tools ...tool.Tool) ([]*session.Event, error) {
	t.Helper()
	inner, err := llmagent.New(llmagent.Config{Name: "worker", Model: llm, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return runLoopOf(t, p, inner)
}

// runLoopOf runs one turn of a LoopAgent around inner, with plugin p, and
// returns its events (or the first error).
func runLoopOf(t *testing.T, p *adkplugin.Plugin, inner agent.Agent) ([]*session.Event, error) {
	t.Helper()
	loop, err := loopagent.New(loopagent.Config{AgentConfig: agent.Config{Name: "loop", SubAgents: []agent.Agent{inner}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "l", Agent: loop, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*session.Event
	for ev, err := range r.Run(t.Context(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if len(evs) > 100 {
			t.Fatal("the loop agent is spinning")
		}
	}
	return evs, nil
}

// TestDuplicateIDInHalfOpenCannotCloseForTheProbe: two calls with the same ID
// to the same tool while half-open: one is the probe, the other is refused.
// The refused one's AfterTool must not report the probe's outcome; the probe
// (which fails) re-opens the breaker.
func TestDuplicateIDInHalfOpenCannotCloseForTheProbe(t *testing.T) {
	gate := make(chan struct{})
	obs := &gateObserver{after: 1, gate: gate}
	var tripped atomic.Bool
	e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
		if rs := scripted.LastResponses(req); rs != nil {
			return scripted.Text("ok")
		}
		if !tripped.Load() {
			return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}})
		}
		r := scripted.CallTools(
			scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}},
			scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "2"}},
		)
		for _, p := range r.Content.Parts {
			p.FunctionCall.ID = "call_0"
		}
		return r
	}, breaker.WithObserver(obs))
	e.backend.SetMode(fakebackend.Down)
	for range 3 {
		e.mustTurn("trip")
	}
	tripped.Store(true)
	obs.count.Store(0)
	e.backend.SetGate(gate) // the probe waits until the duplicate was refused
	e.clk.Advance(30 * time.Second)
	e.mustTurn("probe with a duplicate ID")
	b := e.breaker("billing-api")
	if st, c := b.State(), b.Counts(); st != registry.StateOpen || c.Trips != 2 {
		t.Fatalf("state %v, counts %+v: the failing probe must re-open the breaker", st, c)
	}
	e.assertNoPending()
}
