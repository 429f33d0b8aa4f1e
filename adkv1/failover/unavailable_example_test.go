package failover_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

// By default a chain whose every endpoint fails answers readably; with
// WithErrorWhenUnavailable the caller gets the *failover.Error instead.
func ExampleWithErrorWhenUnavailable() {
	down := errors.New("connection refused")
	for _, opts := range [][]failover.Option{nil, {failover.WithErrorWhenUnavailable()}} {
		m := failover.MustNew("assistant", registry.MustNew(), []failover.Endpoint{
			{LLM: &endpointLLM{name: "primary", err: down}, Key: "model:primary"},
		}, append(opts, failover.WithLogger(slog.New(slog.DiscardHandler)))...)
		for resp, err := range m.GenerateContent(context.Background(), &model.LLMRequest{}, false) {
			if err != nil {
				fmt.Println("error:", errors.Is(err, failover.ErrUnavailable))
				continue
			}
			fmt.Println("answer:", resp.Content.Parts[0].Text)
		}
		m.Close()
	}
	// Output:
	// answer: The assistant is temporarily unavailable. Please try again in about 1 second.
	// error: true
}
