package promexport_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/adkbreaker/adkbreaker/promexport"
)

// Serve adkbreaker's metrics on /metrics for a Prometheus server to scrape.
// The exporter's MeterProvider is the one to give the plugin
// (breaker.WithMeterProvider in the adkv2 or adkv1 plugin package), and
// anything else that records adkbreaker's metrics (failover, mcpguard).
func Example() {
	exp, err := promexport.New()
	if err != nil {
		log.Fatal(err)
	}
	mp := exp.MeterProvider() // breaker.New(breaker.WithMeterProvider(mp), …)
	_ = mp

	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	// go http.ListenAndServe("127.0.0.1:9464", mux)
	// Output:
}

// The endpoint limits itself, since more than Prometheus can often reach
// it: here one scrape at a time, each answered within 5s (503 past either).
func ExampleWithMaxRequestsInFlight() {
	exp, err := promexport.New(promexport.WithMaxRequestsInFlight(1), promexport.WithScrapeTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	_, err = promexport.New(promexport.WithMaxRequestsInFlight(0))
	fmt.Println(err)
	_ = exp
	// Output: promexport: max requests in flight must be at least 1, got 0
}
