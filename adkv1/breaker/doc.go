// Package breaker assembles adkbreaker into an ADK plugin. (It is named
// breaker, not plugin, so that it sits beside ADK's own plugin package in
// one file without an alias.)
//
//	import "github.com/adkbreaker/adkbreaker/adkv1/breaker"
//
//	p, err := breaker.New(
//		breaker.WithDependency("billing-api", "get_invoice", "list_invoices"),
//		breaker.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 3}),
//	)
//	r, err := runner.New(runner.Config{
//		AppName: "app", Agent: a, SessionService: session.InMemoryService(),
//		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}, // first!
//	})
//
// # Why it must be registered first
//
// ADK runs plugin callbacks in slice order and stops at the first that returns
// a result. adkbreaker's OnToolError and AfterTool always return (nil, nil)
// so that plugins after it still run; a plugin before it that returns a result
// (ADK's retryandreflect does, from OnToolError) hides the raw outcome, and
// the breaker would count a failure as a success.
//
// # What it wires
//
// BeforeTool, OnToolError, AfterTool, BeforeModel, BeforeRun and AfterRun of
// a callbacks.Handler. The same callbacks can be set on an llmagent.Config
// directly (see package callbacks), for one agent only.
//
// # What it logs
//
// With nothing else installed, every breaker transition is logged through
// slog (WARN when a breaker opens, INFO when it goes half-open or closes,
// rate-limited per dependency), and so are the runs a cut reaches (the first
// short-circuit of a dependency in a run, a turn the plugin ended), with the
// run's invocation ID. WithLogger sets the logger; WithoutBreakerLog turns
// the lines off. docs/telemetry.md lists them.
//
// ADK never calls Plugin.Close; adkbreaker holds no goroutine or connection
// that needs closing.
package breaker
