package promexport_test

import (
	"log"
	"net/http"

	breaker "github.com/adkbreaker/adkbreaker/plugin"
	"github.com/adkbreaker/adkbreaker/promexport"
)

// Serve adkbreaker's metrics on /metrics for a Prometheus server to scrape.
func Example() {
	exp, err := promexport.New()
	if err != nil {
		log.Fatal(err)
	}
	p, err := breaker.New(
		breaker.WithDependency("billing-api", "get_invoice"),
		breaker.WithMeterProvider(exp.MeterProvider()),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = p // register p first in runner.PluginConfig.Plugins

	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	// go http.ListenAndServe("127.0.0.1:9464", mux)
	// Output:
}
