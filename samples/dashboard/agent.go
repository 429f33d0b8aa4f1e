package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/callbacks"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/scripted"
	breaker "github.com/adkbreaker/adkbreaker/plugin"
	"github.com/adkbreaker/adkbreaker/promexport"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

const dependency = "billing-api"

// run serves the status page and /metrics on ln and drives agent turns
// against a flapping backend until ctx ends.
func run(ctx context.Context, cfg config, ln net.Listener, out io.Writer) (summary, error) {
	start := time.Now()
	var sum summary
	var transitions, shortCircuits atomic.Int64

	// A real HTTP backend that is up for cfg.up, then down for cfg.down.
	down := func() bool {
		cycle := cfg.up + cfg.down
		return cycle > 0 && time.Since(start)%cycle >= cfg.up
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "42", "amount_eur": 120, "status": "paid"})
	}))
	defer backend.Close()

	getInvoice, err := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Fetch an invoice by its ID."},
		func(tc tool.Context, a struct {
			ID string `json:"id"`
		}) (map[string]any, error) {
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
				return nil, err
			}
			var v map[string]any
			return v, json.NewDecoder(resp.Body).Decode(&v)
		})
	if err != nil {
		return sum, err
	}

	exp, err := promexport.New(promexport.WithGoRuntime())
	if err != nil {
		return sum, err
	}
	defer exp.Shutdown(context.Background())
	reg, err := registry.New(registry.WithPolicy(dependency, registry.Policy{
		ConsecutiveFailures: 3, OpenFor: cfg.openFor, MaxOpenFor: 4 * cfg.openFor,
	}))
	if err != nil {
		return sum, err
	}
	defer reg.Subscribe(func(t registry.Transition) {
		transitions.Add(1)
		fmt.Fprintf(out, "[%6.1fs] %s: %s → %s (%s)\n", time.Since(start).Seconds(), t.Key, t.From, t.To, t.Cause)
	})()
	p, err := breaker.New(
		breaker.WithRegistry(reg),
		breaker.WithDependency(dependency, "get_invoice"),
		breaker.WithMeterProvider(exp.MeterProvider()),
		breaker.WithObserver(countShortCircuits{&shortCircuits}),
	)
	if err != nil {
		return sum, err
	}
	page, err := statuspage.New(reg, statuspage.WithTitle("adkbreaker sample"), statuspage.WithRefresh(time.Second))
	if err != nil {
		return sum, err
	}
	defer page.Close()

	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	mux.Handle("/adkbreaker/", http.StripPrefix("/adkbreaker", page))
	mux.Handle("/{$}", http.RedirectHandler("/adkbreaker/", http.StatusFound))
	stop := serve(ln, mux)
	defer stop()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "dashboard: status page %s/adkbreaker/  metrics %s/metrics\n", base, base)

	llm := scripted.New("scripted", decide)
	a, err := llmagent.New(llmagent.Config{Name: "billing_assistant", Model: llm, Tools: []tool.Tool{getInvoice}})
	if err != nil {
		return sum, err
	}
	r, err := runner.New(runner.Config{
		AppName: "dashboard", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*adkplugin.Plugin{p}},
	})
	if err != nil {
		return sum, err
	}

	tick := time.NewTicker(cfg.interval)
	defer tick.Stop()
	for turn := 0; ; turn++ {
		select {
		case <-ctx.Done():
			_ = reg.Flush(context.Background())
			sum.transitions, sum.shortCircuits = transitions.Load(), shortCircuits.Load()
			return sum, ctx.Err()
		case <-tick.C:
		}
		msg := genai.NewContentFromText("Status of invoice 42?", genai.RoleUser)
		for _, err := range r.Run(ctx, "operator", fmt.Sprintf("s-%d", turn), msg, agent.RunConfig{}) {
			_ = err // a cancelled turn at the end of the run
		}
	}
}

// decide is the scripted reasoning: call the tool, then answer from what it
// returned (an unavailable payload included).
func decide(req *model.LLMRequest) *model.LLMResponse {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if fr := p.FunctionResponse; fr != nil {
			if info, ok := degrade.Parse(fr.Response); ok {
				return answer(fmt.Sprintf("Billing is unavailable; try again in about %d s.", info.RetryAfterSeconds))
			}
			return answer("Invoice 42 is paid.")
		}
	}
	return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
		Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_invoice", map[string]any{"id": "42"})}}}
}

func answer(s string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(s, genai.RoleModel), TurnComplete: true}
}

type countShortCircuits struct{ n *atomic.Int64 }

func (c countShortCircuits) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) { c.n.Add(1) }
func (countShortCircuits) TurnEnded(context.Context, callbacks.TurnEndEvent)           {}
