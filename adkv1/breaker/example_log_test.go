package breaker_test

import (
	"context"
	"log/slog"
	"os"
	"runtime"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/registry"
)

// With nothing else installed, a cut reaches the log: WARN when a breaker
// opens, INFO when it closes.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // stable output
			}
			return a
		},
	}))
	reg := registry.MustNew()
	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithLogger(logger))
	if err != nil {
		panic(err)
	}
	// The log subscription lives as long as the plugin; a runner holds it
	// in a real program.
	defer runtime.KeepAlive(p)
	_ = reg.Isolate("billing-api") // an operator cuts it
	reg.Reset("billing-api")
	_ = reg.Flush(context.Background()) // transitions are delivered asynchronously
	// Output:
	// level=WARN msg="adkbreaker: breaker opened" dependency=billing-api from=closed to=open cause=isolated
	// level=INFO msg="adkbreaker: breaker closed" dependency=billing-api from=open to=closed cause=reset
}
