package promexport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adkbreaker/adkbreaker/promexport"
)

// blockingCollector blocks every Collect until release is closed.
type blockingCollector struct {
	entered chan struct{}
	release chan struct{}
}

var blockingDesc = prometheus.NewDesc("blocking", "test", nil, nil)

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- blockingDesc }

func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	c.entered <- struct{}{}
	<-c.release
	ch <- prometheus.MustNewConstMetric(blockingDesc, prometheus.GaugeValue, 1)
}

// TestScrapesInFlightAreLimited: past the limit a scrape is answered 503 at
// once instead of gathering in parallel without bound.
func TestScrapesInFlightAreLimited(t *testing.T) {
	exp, err := promexport.New(promexport.WithMaxRequestsInFlight(1))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	bc := &blockingCollector{entered: make(chan struct{}, 1), release: make(chan struct{})}
	exp.Registry().MustRegister(bc)
	srv := httptest.NewServer(exp.Handler())
	defer srv.Close()
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-bc.entered // the first scrape is gathering
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second scrape while one is in flight = %d, want 503", resp.StatusCode)
	}
	close(bc.release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("first scrape = %d, want 200", code)
	}
}

// TestInvalidOptionsListedTogether: every invalid option is reported.
func TestInvalidOptionsListedTogether(t *testing.T) {
	_, err := promexport.New(promexport.WithMaxRequestsInFlight(0), promexport.WithScrapeTimeout(-time.Second))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"max requests in flight", "scrape timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
