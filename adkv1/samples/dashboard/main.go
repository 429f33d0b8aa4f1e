// Command dashboard runs an ADK agent under a flapping dependency and serves
// what an operator watches: the live status page and Prometheus /metrics.
//
//	go run ./samples/dashboard                      # until interrupted
//	go run ./samples/dashboard -duration 30s        # then prints a summary
//
// The first line printed names both URLs. Point a Prometheus server at
// /metrics (see dashboards/prometheus.yml) and import
// dashboards/adkbreaker.json into Grafana to see the dashboard described in
// docs/dashboards.md. The model is scripted (offline); the ADK runner, the
// plugin, the tool and its HTTP backend are real.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address of the status page and /metrics")
	flag.DurationVar(&cfg.duration, "duration", 0, "run this long, then print a summary (0: until interrupted)")
	flag.DurationVar(&cfg.interval, "interval", 200*time.Millisecond, "time between agent turns")
	flag.DurationVar(&cfg.up, "up", 20*time.Second, "how long the dependency stays up in each cycle")
	flag.DurationVar(&cfg.down, "down", 15*time.Second, "how long the dependency stays down in each cycle")
	flag.DurationVar(&cfg.openFor, "open-for", 5*time.Second, "the breaker's open hold")
	flag.IntVar(&cfg.cycles, "cycles", 0, "stop failing after this many outages (0: keep cycling)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	sum, err := run(ctx, cfg, ln, os.Stdout)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	fmt.Printf("summary: transitions=%d short_circuits=%d\n", sum.transitions, sum.shortCircuits)
}

type config struct {
	addr                         string
	duration, interval, up, down time.Duration
	openFor                      time.Duration
	cycles                       int
}

type summary struct{ transitions, shortCircuits int64 }

// serve starts the HTTP server on ln and returns a function that stops it.
func serve(ln net.Listener, h http.Handler) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
