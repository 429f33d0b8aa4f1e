package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
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

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
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

	// Each cycle: everything up for cfg.up; then the tool's backend goes
	// down; a third of the way into its outage the primary model endpoint
	// fails too, and two thirds in the fallback endpoint as well, so every
	// signal on the dashboard moves.
	phase := func() time.Duration {
		cycle := cfg.up + cfg.down
		el := time.Since(start)
		if cycle <= 0 || (cfg.cycles > 0 && el >= time.Duration(cfg.cycles)*cycle) {
			return 0 // up for good
		}
		return el % cycle
	}
	down := func() bool { return phase() >= cfg.up }
	primaryDown := func() bool { return phase() >= cfg.up+cfg.down/3 }
	fallbackDown := func() bool { return phase() >= cfg.up+2*cfg.down/3 }
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
		func(tc agent.ToolContext, a struct {
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
	reg, err := registry.New(registry.WithDefaultPolicy(registry.Policy{
		ConsecutiveFailures: 3, OpenFor: cfg.openFor, MaxOpenFor: 4 * cfg.openFor,
	}))
	if err != nil {
		return sum, err
	}
	defer reg.Subscribe(func(t registry.Transition) {
		transitions.Add(1)
		fmt.Fprintf(out, "[%6.1fs] %s: %s → %s (%s)\n", time.Since(start).Seconds(), t.Key, t.From, t.To, t.Cause)
	})()
	llm, err := failover.New("assistant-model", reg, []failover.Endpoint{
		// Each call reports 150 tokens of usage, for the outage cost.
		{LLM: flaky{scripted.New("primary", scripted.Costing(decide, 120, 30)), primaryDown}, Key: "model:primary", Throttle: &failover.Throttle{}},
		{LLM: flaky{scripted.New("fallback", scripted.Costing(decide, 120, 30)), fallbackDown}, Key: "model:fallback"},
	}, failover.WithMeterProvider(exp.MeterProvider()), failover.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return sum, err
	}
	costs := statuspage.NewTurnCosts(reg.Clock()) // the page's outage-cost figure
	p, err := breaker.New(
		breaker.WithRegistry(reg),
		breaker.WithCostObserver(costs),
		breaker.WithDependency(dependency, "get_invoice"),
		breaker.WithMeterProvider(exp.MeterProvider()),
		breaker.WithObserver(countShortCircuits{&shortCircuits}),
		breaker.WithModelGuard(llm),
		breaker.WithShortCircuitLimit(2),
		breaker.WithTurnLimit(3),
	)
	if err != nil {
		return sum, err
	}
	page, err := statuspage.New(reg, statuspage.WithTitle("adkbreaker sample"), statuspage.WithRefresh(time.Second),
		statuspage.WithThrottles(llm.ThrottleOf), // the primary's throttle in its row
		statuspage.WithTurnCosts(costs))
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

// decide is the scripted reasoning of a stubborn model: call the tool, and
// when it is unavailable call it again, up to four times in a turn (the
// plugin ends the turn first).
func decide(req *model.LLMRequest) *model.LLMResponse {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if fr := p.FunctionResponse; fr != nil {
			if info, ok := degrade.Parse(fr.Response); ok && info.ThisTurn < 4 {
				break
			} else if ok {
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

// flaky is a model endpoint that answers 503 while down reports true.
type flaky struct {
	model.LLM
	down func() bool
}

func (f flaky) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	if f.down() {
		return func(yield func(*model.LLMResponse, error) bool) {
			yield(nil, genai.APIError{Code: http.StatusServiceUnavailable, Status: "UNAVAILABLE", Message: "model overloaded"})
		}
	}
	return f.LLM.GenerateContent(ctx, req, stream)
}

type countShortCircuits struct{ n *atomic.Int64 }

func (c countShortCircuits) ShortCircuit(context.Context, callbacks.ShortCircuitEvent) { c.n.Add(1) }
func (countShortCircuits) TurnEnded(context.Context, callbacks.TurnEndEvent)           {}
