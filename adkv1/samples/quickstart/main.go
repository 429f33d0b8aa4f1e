// Command quickstart shows adkbreaker protecting an ADK agent whose billing
// backend goes down and comes back.
//
//	go run ./samples/quickstart
//
// Offline by default: a scripted model stands in for the model's reasoning
// (everything else — the ADK runner, callbacks, tools, HTTP — is real). With
// GOOGLE_API_KEY set it uses a real Gemini model (QUICKSTART_MODEL, default
// gemini-2.5-flash) and its decisions will differ from run to run.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/model/gemini"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

const (
	dependency = "billing-api"
	openFor    = 2 * time.Second
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// stats are the numbers of the closing summary line.
type stats struct {
	attempted, shortCircuited, escalations atomic.Int64
}

func run() error {
	ctx := context.Background()
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	// 1. A real HTTP billing service on 127.0.0.1 that we can take down.
	var down atomic.Bool
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if down.Load() {
			// Upstream error text is never shown to the model by adkbreaker.
			http.Error(w, "upstream 10.0.0.7:5432 unavailable; token=sk-live-123", http.StatusServiceUnavailable)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/invoices/")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "amount_eur": 120, "status": "paid"})
	}))
	defer backend.Close()

	// 2. The tool that calls it.
	var st stats
	type args struct {
		ID string `json:"id" jsonschema:"the invoice ID"`
	}
	getInvoice, err := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch an invoice by its ID from the billing system."},
		func(tc agent.ToolContext, a args) (map[string]any, error) {
			req, err := http.NewRequestWithContext(tc, http.MethodGet, backend.URL+"/invoices/"+a.ID, nil)
			if err != nil {
				return nil, err
			}
			resp, err := backend.Client().Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if err := callbacks.CheckResponse(resp); err != nil {
				logf("  tool    get_invoice(%s) → backend answered %d", a.ID, resp.StatusCode)
				return nil, err
			}
			var out map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return nil, err
			}
			logf("  tool    get_invoice(%s) → %v", a.ID, out)
			return out, nil
		})
	if err != nil {
		return err
	}

	// 3. adkbreaker: the backend is one dependency; it opens after 3
	// consecutive failures and probes again after openFor.
	reg, err := registry.New(registry.WithPolicy(dependency, registry.Policy{
		ConsecutiveFailures: 3, OpenFor: openFor, NoJitter: true,
	}))
	if err != nil {
		return err
	}
	unsubscribe := reg.Subscribe(func(t registry.Transition) {
		logf("  breaker %s: %s → %s (%s)", t.Key, t.From, t.To, t.Cause)
	})
	defer unsubscribe()
	p, err := breaker.New(
		breaker.WithRegistry(reg),
		breaker.WithDependency(dependency, "get_invoice"),
		breaker.WithObserver(observer{logf: logf, st: &st}),
	)
	if err != nil {
		return err
	}

	// 4. The agent, on a scripted model or on Gemini.
	var llm model.LLM = reasoning{}
	if key := os.Getenv("GOOGLE_API_KEY"); key != "" {
		name := os.Getenv("QUICKSTART_MODEL")
		if name == "" {
			name = "gemini-2.5-flash"
		}
		llm, err = gemini.NewModel(ctx, name, &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI})
		if err != nil {
			return err
		}
		logf("model: %s (Gemini API)", name)
	} else {
		logf("model: scripted (offline; set GOOGLE_API_KEY to use Gemini)")
	}
	a, err := llmagent.New(llmagent.Config{
		Name: "billing_assistant", Model: llm, Tools: []tool.Tool{getInvoice},
		Instruction: "You answer questions about invoices. Use get_invoice to look them up.",
	})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{
		AppName: "quickstart", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}}, // adkbreaker first
	})
	if err != nil {
		return err
	}

	turn := 0
	ask := func(q string) {
		turn++
		logf("user    %q", q)
		for ev, err := range r.Run(ctx, "user", fmt.Sprintf("session-%d", turn), genai.NewContentFromText(q, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				logf("  error   %v", err)
				continue
			}
			if ev.Content == nil {
				continue
			}
			for _, part := range ev.Content.Parts {
				switch {
				case part.FunctionCall != nil:
					st.attempted.Add(1)
					logf("  model   calls %s(%v)", part.FunctionCall.Name, part.FunctionCall.Args)
				case part.FunctionResponse != nil:
					if info, ok := degrade.Parse(part.FunctionResponse.Response); ok {
						logf("  model   receives: %s unavailable (%s), retry in %ds, %d/%d this turn",
							info.Dependency, info.Reason, info.RetryAfterSeconds, info.ThisTurn, info.Limit)
						if g, ok := part.FunctionResponse.Response[degrade.KeyGuidance].(string); ok {
							logf("          guidance: %q", g)
						}
					}
				case part.Text != "" && ev.Content.Role == genai.RoleModel:
					logf("  answer  %s", strings.TrimSpace(part.Text))
				}
			}
		}
		_ = reg.Flush(ctx)
	}

	ask("What is the status of invoice 42?")
	logf("--- billing backend goes down")
	down.Store(true)
	for _, id := range []string{"43", "44", "45"} {
		ask("And invoice " + id + "?")
	}
	ask("Try invoice 46, please.")
	logf("--- billing backend comes back; waiting %s for the breaker's cool-down", openFor)
	down.Store(false)
	time.Sleep(openFor + 100*time.Millisecond)
	ask("Invoice 47?")
	ask("And invoice 48?")

	b, _ := reg.Lookup(dependency)
	fmt.Printf("summary: attempted=%d reached=%d short_circuited=%d escalations=%d final_state=%s\n",
		st.attempted.Load(), reached.Load(), st.shortCircuited.Load(), st.escalations.Load(), stateName(b))
	return nil
}

func stateName(b *registry.Breaker) string {
	if b == nil {
		return "closed"
	}
	return b.State().String()
}

// observer prints the plugin's short-circuits and counts escalations.
type observer struct {
	logf func(string, ...any)
	st   *stats
}

func (o observer) ShortCircuit(_ context.Context, ev callbacks.ShortCircuitEvent) {
	o.st.shortCircuited.Add(1)
	if ev.Terminal {
		o.st.escalations.Add(1)
		o.logf("  plugin  short-circuit #%d of %s: escalated (the model is told to answer without it)", ev.ThisTurn, ev.Dependency)
		return
	}
	o.logf("  plugin  short-circuit #%d of %s: %s, retry in %s", ev.ThisTurn, ev.Dependency, ev.Reason, ev.RetryAfter.Round(time.Millisecond))
}

func (o observer) TurnEnded(_ context.Context, ev callbacks.TurnEndEvent) {
	o.logf("  plugin  ended the turn (%s)", ev.Reason)
}

// reasoning is the offline stand-in for a model's reasoning: call the tool
// for the invoice asked about; if it is unavailable, try once more (models
// do); when told to stop, answer without it.
type reasoning struct{}

func (reasoning) Name() string { return "scripted" }

func (reasoning) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(decide(req), nil)
	}
}

func decide(req *model.LLMRequest) *model.LLMResponse {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if fr := p.FunctionResponse; fr != nil {
			if info, ok := degrade.Parse(fr.Response); ok {
				if info.Terminal {
					return text(fmt.Sprintf("Sorry — the billing system (%s) is temporarily unavailable, so I can't look that invoice up right now. Please try again in about %d seconds.", info.Dependency, info.RetryAfterSeconds))
				}
				return callTool(lastInvoice(req)) // a model that retries
			}
			if _, failed := fr.Response["error"]; failed {
				return text("The billing system returned an error; I couldn't fetch that invoice.")
			}
			return text(fmt.Sprintf("Invoice %v: %v EUR, %v.", fr.Response["id"], fr.Response["amount_eur"], fr.Response["status"]))
		}
	}
	return callTool(lastInvoice(req))
}

func lastInvoice(req *model.LLMRequest) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != genai.RoleUser {
			continue
		}
		for _, p := range c.Parts {
			fields := strings.FieldsFunc(p.Text, func(r rune) bool { return r < '0' || r > '9' })
			if len(fields) > 0 {
				return fields[len(fields)-1]
			}
		}
	}
	return "0"
}

func callTool(id string) *model.LLMResponse {
	return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
		Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_invoice", map[string]any{"id": id})}}}
}

func text(s string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(s, genai.RoleModel), TurnComplete: true}
}
