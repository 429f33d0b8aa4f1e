package main

import (
	"github.com/chromedp/chromedp"

	"context"
	"encoding/json"
	"fmt"
	"github.com/adkbreaker/adkbreaker/internal/browsertest"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func requireTool(t *testing.T, name string) string { return browsertest.RequireTool(t, name, name) }

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startSample runs the sample in-process on ln: cfg.cycles outages of the
// billing backend (and, inside each, of both model endpoints), then up for
// good.
func startSample(ln net.Listener, cfg config) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = run(ctx, cfg, ln, io.Discard)
	}()
	return func() { cancel(); <-done }
}

type prom struct {
	t    *testing.T
	base string
}

// startPrometheus runs a real Prometheus scraping target every second,
// with the shipped alert rules (their "for" shortened to forOverride so an
// outage of seconds can fire them; promtool test rules covers the real
// durations).
func startPrometheus(t *testing.T, target, forOverride string) *prom {
	t.Helper()
	bin := requireTool(t, "prometheus")
	dir := t.TempDir()
	rules, err := os.ReadFile("../../../dashboards/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	short := regexp.MustCompile(`(?m)^(\s+for:\s+)\S+$`).ReplaceAll(rules, []byte("${1}"+forOverride))
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), short, 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(target)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: adkbreaker-sample
    static_configs: [{targets: [%q]}]
`, u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	p := &prom{t: t, base: "http://" + addr}
	p.waitFor("prometheus ready", 60*time.Second, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// waitFor polls cond (an external process's state: there is no clock to
// inject) until it holds or the deadline passes.
func (p *prom) waitFor(what string, within time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

type apiResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	} `json:"data"`
}

func (p *prom) get(path string, q url.Values) apiResult {
	p.t.Helper()
	resp, err := http.Get(p.base + path + "?" + q.Encode())
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r apiResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		p.t.Fatal(err)
	}
	return r
}

func (p *prom) firing(alert, dependency string) bool {
	for _, a := range p.get("/api/v1/alerts", nil).Data.Alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" && (dependency == "" || a.Labels["dependency"] == dependency) {
			return true
		}
	}
	return false
}

// queryRange evaluates expr over [start, end] and returns the series.
func (p *prom) queryRange(expr string, start, end time.Time) (apiResult, error) {
	r := p.get("/api/v1/query_range", url.Values{
		"query": {expr}, "start": {fmt.Sprint(start.Unix())}, "end": {fmt.Sprint(end.Unix())}, "step": {"1"},
	})
	if r.Status != "success" {
		return r, fmt.Errorf("%s: %s", expr, r.Error)
	}
	return r, nil
}

// grafanaVars replaces the dashboard's template variables with what Grafana
// would send for "All" over the test's short range.
func grafanaVars(expr string) string {
	return strings.NewReplacer(
		"$dependency", ".*", "${dependency}", ".*",
		"$__rate_interval", "5s", "$__range", "1m", "$__interval", "1s",
	).Replace(expr)
}

// dashboardExprs returns every PromQL expression in the shipped Grafana
// dashboard: panel targets, annotations and variable queries
// (label_values(metric, label) is Grafana's; its metric is queried).
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../../dashboards/adkbreaker.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q #%d", p.Title, i)] = tg.Expr
		}
	}
	lv := regexp.MustCompile(`^label_values\(([a-z_:]+),\s*[a-z_]+\)$`)
	for _, v := range d.Templating.List {
		if m := lv.FindStringSubmatch(v.Definition); m != nil {
			out["variable "+v.Name] = m[1]
		}
	}
	for _, a := range d.Annotations.List {
		out["annotation "+a.Name] = a.Expr
	}
	return out
}

// alertExprs returns the expression of every shipped alert rule.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../../dashboards/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var name string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "- alert: "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(line, "expr: "); ok && name != "" {
			out["alert "+name] = v
		}
	}
	if len(out) < 5 {
		t.Fatalf("found %d alert expressions", len(out))
	}
	return out
}

// TestPrometheusEvaluatesShippedDashboardAndAlerts scrapes the sample with a
// real Prometheus through four outages and a recovery, then checks that the
// "dependency unavailable" alert fired during the outage and resolved after
// it, and that every PromQL expression shipped in dashboards/ returns data.
func TestPrometheusEvaluatesShippedDashboardAndAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; not in -short")
	}
	requireTool(t, "prometheus")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the sample closes it too; this is for an early return
	// Prometheus scrapes before the first outage: it sees a counter's
	// first sample as no increase, so when its start (seconds under load)
	// outlasted the first two outages it saw two trips of four and
	// AdkbreakerFlapping never fired.
	p := startPrometheus(t, "http://"+ln.Addr().String()+"/metrics", "2s")
	begin := time.Now()
	stop := startSample(ln, config{
		interval: 50 * time.Millisecond, up: 2500 * time.Millisecond, down: 4 * time.Second,
		openFor: 400 * time.Millisecond, cycles: 4,
	})
	defer stop()

	p.waitFor("AdkbreakerDependencyUnavailable firing for billing-api", 40*time.Second, func() bool {
		return p.firing("AdkbreakerDependencyUnavailable", "billing-api")
	})
	// A counter's first sample is not an increase to Prometheus, so the
	// fourth trip is the third it sees.
	p.waitFor("AdkbreakerFlapping firing for billing-api", 60*time.Second, func() bool {
		return p.firing("AdkbreakerFlapping", "billing-api")
	})
	// Four cycles take 26 s; then everything stays up and closes.
	p.waitFor("AdkbreakerDependencyUnavailable resolved", 60*time.Second, func() bool {
		return time.Since(begin) > 27*time.Second && !p.firing("AdkbreakerDependencyUnavailable", "")
	})
	end := time.Now()
	screenshotPrometheus(t, p.base)

	// Every shipped expression returns data over the run.
	exprs := dashboardExprs(t)
	for k, v := range alertExprs(t) {
		exprs[k] = v
	}
	// Expected empty: nothing was dropped, and the sample sets no bulkhead
	// (max_concurrent), so nothing is refused as saturated (the alert's
	// promtool tests cover it). Asserted, not skipped.
	wantEmpty := map[string]bool{"alert AdkbreakerTransitionsDropped": true, "alert AdkbreakerSaturated": true}
	for name, expr := range exprs {
		r, err := p.queryRange(grafanaVars(expr), begin, end)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n := 0
		for _, s := range r.Data.Result {
			for _, v := range s.Values {
				if f, ok := v[1].(string); ok && f != "NaN" {
					n++
				}
			}
		}
		switch {
		case wantEmpty[name] && n != 0:
			t.Errorf("%s: %d samples, want none (%s)", name, n, expr)
		case !wantEmpty[name] && n == 0:
			t.Errorf("%s returned no data: %s", name, grafanaVars(expr))
		}
	}
}

// screenshotPrometheus shows, in Prometheus's own UI, the alert rules and the
// dashboard's state query over the run (docs/dashboards.md shows them; the
// Grafana dashboard runs the same queries). Skipped without Chromium.
func screenshotPrometheus(t *testing.T, base string) {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("CI") != "true" {
		return
	}
	ctx := browsertest.New(t, 60*time.Second)
	docs := filepath.Join("..", "..", "..", "docs", "img")
	// Debian's prometheus package serves the classic UI.
	graph := base + "/classic/graph?g0.expr=" + url.QueryEscape("max by (dependency) (adkbreaker_breaker_state)") +
		"&g0.tab=0&g0.range_input=1m&g1.expr=" + url.QueryEscape(`sum by (dependency, outcome) (rate(adkbreaker_calls_total[5s]))`) +
		"&g1.tab=0&g1.range_input=1m"
	for _, shot := range []struct{ url, wait, name string }{
		{base + "/classic/alerts", "body", "prometheus-alerts.png"},
		{graph, "body", "prometheus-graph.png"},
	} {
		// The pause lets the React UI finish drawing before the picture.
		if err := chromedp.Do(ctx, chromedp.Navigate(shot.url), chromedp.WaitReady(chromedp.CSS(shot.wait)), chromedp.Sleep(2*time.Second)); err != nil {
			t.Fatalf("%s: %v", shot.url, err)
		}
		// The fixed navigation bar would float over a full-page picture.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelectorAll("nav").forEach(n => n.remove()); return true })()`)); err != nil {
			t.Fatal(err)
		}
		browsertest.Screenshot(t, ctx, docs, shot.name)
	}
}
