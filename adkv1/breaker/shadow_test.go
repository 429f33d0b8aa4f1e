package breaker_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
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

// TestShadowModeAdmitsEveryCallAndCountsExactly: on the real runner, a
// shadow-mode breaker trips as usual, but every later call still reaches the
// backend and the model never sees a payload; each would-be refusal is
// counted once, as a short-circuit with mode=shadow.
func TestShadowModeAdmitsEveryCallAndCountsExactly(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e := newEnv(t, callOnce("get_invoice", map[string]any{"id": "42"}),
		breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true}),
		breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	e.backend.SetMode(fakebackend.Down)
	for i := range 8 {
		evs := e.mustTurn("invoice 42?")
		for _, ev := range evs {
			if ev.Content == nil {
				continue
			}
			for _, p := range ev.Content.Parts {
				if fr := p.FunctionResponse; fr != nil {
					if _, ok := degrade.Parse(fr.Response); ok {
						t.Fatalf("turn %d: the model got an unavailable payload from a shadow breaker", i)
					}
				}
			}
		}
	}
	if hits := e.backend.Hits(); hits != 8 {
		t.Errorf("backend hits = %d, want all 8 calls", hits)
	}
	b, _ := e.reg.Lookup("billing-api")
	if c := b.Counts(); c.ShadowRefusals != 5 || c.ShortCircuits != 0 || b.State() != registry.StateOpen {
		t.Errorf("counts = %+v state %v, want 5 shadow refusals (3 failures tripped it), none enforced", c, b.State())
	}
	flush(t, e.reg)
	m := metrics(t, reader)["adkbreaker.short_circuits"]
	if got := m["dependency=billing-api,mode=shadow,reason=circuit_open,terminal=false,tool=get_invoice"]; got != 5 || len(m) != 1 {
		t.Errorf("short_circuits = %v, want 5 with mode=shadow only", m)
	}
	if tix, invs := e.h.Pending(); tix != 0 || invs != 0 {
		t.Errorf("pending = %d/%d after the turns", tix, invs)
	}
}

// outageTools are get_invoice and list_invoices against backend, as
// newEnv builds them (without its blocking hook).
func outageTools(t *testing.T, backend *fakebackend.Server) []tool.Tool {
	t.Helper()
	return invoiceTools(t, func(ctx agent.ToolContext, path string) (map[string]any, error) {
		return getInvoice(ctx, backend, path)
	})
}

// getInvoice GETs path from backend and classifies the answer as the
// plugin's users do (callbacks.CheckResponse).
func getInvoice(ctx agent.ToolContext, backend *fakebackend.Server, path string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, backend.URL()+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := backend.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := callbacks.CheckResponse(resp); err != nil {
		return nil, err
	}
	return map[string]any{"invoice": path, "status": "paid"}, nil
}

// invoiceTools are get_invoice (an ID) and list_invoices, both calling
// call with their backend path.
func invoiceTools(t *testing.T, call func(ctx agent.ToolContext, path string) (map[string]any, error)) []tool.Tool {
	t.Helper()
	get, err := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch one invoice by ID."},
		func(ctx agent.ToolContext, a invoiceArgs) (map[string]any, error) {
			return call(ctx, "/invoices/"+a.ID)
		})
	if err != nil {
		t.Fatal(err)
	}
	list, err := functiontool.New(functiontool.Config{Name: "list_invoices", Description: "List invoices."},
		func(ctx agent.ToolContext, _ struct{}) (map[string]any, error) { return call(ctx, "/invoices") })
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{get, list}
}

// runOutage drives one whole outage of backend through the real ADK runner
// with plugins (none for the baseline) and returns every request the
// scripted model received, serialised as the model reads it: the model
// name, the contents, the generation config (system instruction, tool
// declarations) and the names of the request's tools. advance moves the
// plugin's clock (a no-op for the baseline).
func runOutage(t *testing.T, backend *fakebackend.Server, advance func(time.Duration), plugins ...*adkplugin.Plugin) []string {
	t.Helper()
	var reqs []string
	step := func(req *model.LLMRequest) *model.LLMResponse {
		names := slices.Sorted(maps.Keys(req.Tools))
		b, err := json.Marshal(struct {
			Model    string
			Contents []*genai.Content
			Config   *genai.GenerateContentConfig
			Tools    []string
		}{req.Model, req.Contents, req.Config, names})
		if err != nil {
			t.Error(err)
		}
		reqs = append(reqs, string(b))
		switch rs := scripted.LastResponses(req); {
		case rs == nil:
			return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "42"}})
		case rs[0].Name == "get_invoice":
			return scripted.CallTools(scripted.Call{Name: "list_invoices"})
		default:
			return scripted.Text(fmt.Sprintf("got %v", rs[0].Response))
		}
	}
	a, err := llmagent.New(llmagent.Config{Name: "billing_agent", Model: scripted.New("scripted", step), Tools: outageTools(t, backend)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "e2e", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	turn := func() {
		n++
		for _, err := range r.Run(t.Context(), "u", fmt.Sprintf("s%d", n), genai.NewContentFromText("invoice 42?", genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
		}
	}
	backend.SetMode(fakebackend.Down)
	for range 4 { // trips after 3 failures; every later call would be refused
		turn()
	}
	advance(31 * time.Second) // the hold expires: the next call would be the probe; it fails
	turn()
	turn()
	backend.SetMode(fakebackend.Up)
	advance(2 * time.Minute)
	turn() // the probe succeeds: closed again
	turn()
	return reqs
}

// TestShadowModeChangesNothingTheModelReads: across a whole outage on the
// real runner (trip, refusals that would have been, a failed probe, the
// recovery), every request the model receives with a shadow-mode breaker is
// byte-identical to the same run without the plugin: no declaration marked
// unavailable or removed, no tool note, no payload, no ended turn. The
// would-be annotations are counted instead.
func TestShadowModeChangesNothingTheModelReads(t *testing.T) {
	backend := fakebackend.New()
	t.Cleanup(backend.Close)
	want := runOutage(t, backend, func(time.Duration) {})

	for _, tc := range []struct {
		name  string
		extra []breaker.Option
	}{
		{"mark", nil},
		{"remove and note", []breaker.Option{breaker.WithRemoveUnavailable(), breaker.WithToolNote()}},
		{"low limits", []breaker.Option{breaker.WithShortCircuitLimit(1), breaker.WithTurnLimit(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
			reader := sdkmetric.NewManualReader()
			h, err := breaker.NewHandler(append([]breaker.Option{
				breaker.WithClock(clk),
				breaker.WithDependency("billing-api", "get_invoice", "list_invoices"),
				breaker.WithDependencyOptions("billing-api", callbacks.Dependency{Alternatives: []string{"list_invoices"}}),
				breaker.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 3, OpenFor: 30 * time.Second, NoJitter: true, DisableFailureRate: true, Shadow: true}),
				breaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
			}, tc.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			p, err := breaker.FromHandler(h, "")
			if err != nil {
				t.Fatal(err)
			}
			hits := backend.Hits()
			got := runOutage(t, backend, clk.Advance, p)
			if n := backend.Hits() - hits; n != 16 {
				t.Errorf("backend hits = %d, want every one of the 16 calls", n)
			}
			if len(got) != len(want) {
				t.Fatalf("%d model requests, want %d as without the plugin", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("model request %d differs from the run without the plugin:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
			b, ok := h.Registry().Lookup("billing-api")
			if !ok {
				t.Fatal("no breaker")
			}
			if c := b.Counts(); c.Trips != 2 || c.ShadowRefusals == 0 || c.ShortCircuits != 0 || b.State() != registry.StateClosed {
				t.Errorf("counts %+v state %v: want 2 trips (the threshold, the failed probe), shadow refusals, none enforced, closed at the end", c, b.State())
			}
			flush(t, h.Registry())
			m := metrics(t, reader)["adkbreaker.shadow_annotations"]
			// Open after the 3rd call: the 4th turn's second request and
			// third, and the 5th turn's requests after the failed probe;
			// each declares both tools.
			if m["dependency=billing-api,tool=get_invoice"] == 0 || m["dependency=billing-api,tool=list_invoices"] == 0 {
				t.Errorf("shadow_annotations = %v, want the would-be annotations of both tools counted", m)
			}
		})
	}
}
