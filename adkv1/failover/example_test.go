package failover_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

// endpointLLM stands in for a model/gemini model in the examples: it fails
// with err, or answers with its name.
type endpointLLM struct {
	name string
	err  error
}

func (e *endpointLLM) Name() string { return e.name }

func (e *endpointLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if e.err != nil {
			yield(nil, e.err)
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("answered by "+req.Model, genai.RoleModel)}, nil)
	}
}

// exampleLogger writes log lines without timestamps, for checked output.
func exampleLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func Example() {
	pro := failover.EndpointKey("gemini-2.5-pro", "gemini_api", "")
	flash := failover.EndpointKey("gemini-2.5-flash", "gemini_api", "")
	// One registry for the plugin and the model; conservative model policies.
	reg := registry.MustNew(failover.PolicyOptions(pro, flash)...)

	overloaded := genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "The model is overloaded."}
	m, err := failover.New("assistant", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "gemini-2.5-pro", err: overloaded}, Key: pro},
		{LLM: &endpointLLM{name: "gemini-2.5-flash"}, Key: flash},
	}, failover.WithLogger(exampleLogger()))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	// In an agent: llmagent.Config{Model: m} and, in the plugin,
	// breaker.New(breaker.WithRegistry(reg), breaker.WithModelGuard(m)).

	req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
	for resp, err := range m.GenerateContent(context.Background(), req, false) {
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Content.Parts[0].Text)
		fmt.Println(resp.CustomMetadata[failover.AttrEndpoint])
		fmt.Println(resp.CustomMetadata[failover.AttrFailoverReason])
	}
	// Output:
	// level=WARN msg="adkbreaker: model failover" model=assistant from=model:gemini-2.5-pro@gemini_api/ to=model:gemini-2.5-flash@gemini_api/ reason=server_error retry_after=0s from_model=gemini-2.5-pro to_model=gemini-2.5-flash error="Error 503, Message: The model is overloaded., Status: UNAVAILABLE, Details: []"
	// answered by gemini-2.5-flash
	// model:gemini-2.5-flash@gemini_api/
	// server_error
}

func ExampleModel_ModelUnavailable() {
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 30 * time.Second, NoJitter: true}))
	down := errors.New("connection refused")
	m := failover.MustNew("assistant", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "primary", err: down}, Key: "model:primary"},
		{LLM: &endpointLLM{name: "fallback", err: down}, Key: "model:fallback"},
	}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	defer m.Close()

	// Both endpoints fail: by default the model answers readably (with
	// WithErrorWhenUnavailable it would yield a *failover.Error).
	for resp, err := range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
		fmt.Println(err, resp.Content.Parts[0].Text)
	}
	// Both breakers are open now: the plugin's BeforeModel asks the guard
	// and ends the turn with a readable answer instead of calling the model.
	unavailable, retryAfter := m.ModelUnavailable("assistant")
	fmt.Println(unavailable, retryAfter)
	clk.Advance(30 * time.Second)
	fmt.Println(m.ModelUnavailable("assistant"))
	// Output:
	// <nil> The assistant is temporarily unavailable. Please try again in about 30 seconds.
	// true 30s
	// false 0s
}

func ExampleClassify() {
	for _, err := range []error{
		genai.APIError{Code: 503, Status: "UNAVAILABLE"},
		genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}}},
		genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{
				map[string]any{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}}}},
		genai.APIError{Code: 400, Status: "INVALID_ARGUMENT"},
		context.DeadlineExceeded,
	} {
		v := failover.Classify(err)
		fmt.Printf("%-8s failover=%-5v %-15s %s\n", v.Outcome, v.Failover, v.Reason, v.RetryAfter)
	}
	// Output:
	// failure  failover=true  server_error    0s
	// failure  failover=true  rate_limited    30s
	// failure  failover=true  quota_exhausted 0s
	// excluded failover=false                 0s
	// failure  failover=true  timeout         0s
}

func ExampleLogTransitions() {
	clk := registrytest.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.MustNew(registry.WithClock(clk),
		registry.WithDefaultPolicy(registry.Policy{ConsecutiveFailures: 1, OpenFor: 30 * time.Second, NoJitter: true}))
	stop := failover.LogTransitions(reg, exampleLogger())
	defer stop()

	b, _ := reg.Get("model:gemini-2.5-pro@gemini_api/")
	tk, _ := b.Admit()
	tk.Done(registry.Failure)
	_ = reg.Flush(context.Background())
	// Output:
	// level=WARN msg="adkbreaker: breaker state change" key=model:gemini-2.5-pro@gemini_api/ from=closed to=open cause=trip retry_after=30s seq=1
}

// An endpoint with client-side adaptive throttling: under a partial 429
// storm a share of its calls goes straight to the fallback.
func ExampleThrottle() {
	reg := registry.MustNew(failover.PolicyOptions("model:pro", "model:flash")...)
	m, err := failover.New("assistant", reg, []failover.Endpoint{
		{LLM: &endpointLLM{name: "gemini-2.5-pro"}, Key: "model:pro", Throttle: &failover.Throttle{}}, // k 1.2, 30s window
		{LLM: &endpointLLM{name: "gemini-2.5-flash"}, Key: "model:flash"},
	})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	st := m.Status()[0].Throttle
	fmt.Println("reject probability", st.RejectProbability, "shed", st.Rejections)
	// Output: reject probability 0 shed 0
}
