package statuspage_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// TestDocumentRates: the rate series come from the registry's counters,
// one point per interval, oldest first, starting with the interval the
// page first saw the dependency in; a gap the samples missed is spread
// over the intervals it covers; the series never exceeds ten minutes.
func TestDocumentRates(t *testing.T) {
	reg, clk := fakeRegistry(t, registry.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 1 << 20, DisableFailureRate: true}))
	b := mustGet(t, reg, "billing-api")
	h, _ := newPage(t, reg)

	calls(clk, b, 30, 100*time.Millisecond, registry.Success) // 3 s
	calls(clk, b, 10, 100*time.Millisecond, registry.Failure) // 1 s
	clk.Advance(6 * time.Second)
	r := h.Document().Dependencies[0].Rates
	if !r.Start.Equal(t0) || r.IntervalSeconds != 10 {
		t.Errorf("series starts %v every %v s, want %v every 10 s", r.Start, r.IntervalSeconds, t0)
	}
	if got := r.CallsPerSecond; len(got) != 2 || got[0] != 4 || got[1] != 0 {
		t.Errorf("calls/s %v, want [4 0] (40 calls in the first 10 s, none since)", got)
	}
	if f := r.FailurePercent; len(f) != 2 || f[0] == nil || *f[0] != 25 || f[1] != nil {
		t.Errorf("failure %% %v, want 25 then none", f)
	}
	if p := r.P99LatencyMs; p[0] == nil || *p[0] != 131.072 { // 100 ms: the bucket up to 131.072 ms
		t.Errorf("p99 %v, want 131.072 ms", p)
	}

	// Thirty seconds unseen, isolated, 60 calls refused: the gap is spread
	// over the three intervals it covers.
	b.Isolate()
	calls(clk, b, 20, 0, registry.Success)
	h.Document() // a sample between the refusals: one entry all the same
	calls(clk, b, 40, 0, registry.Success)
	h.Document()
	clk.Advance(30 * time.Second)
	r = h.Document().Dependencies[0].Rates
	if sc := r.ShortCircuitsPerSecond; len(sc) != 5 || sc[1] != 2 || sc[2] != 2 || sc[3] != 2 || sc[4] != 0 {
		t.Errorf("short-circuits/s %v, want [0 2 2 2 0]", sc)
	}
	d := h.Document().Dependencies[0]
	if d.Refusals["isolated"] != 60 || len(d.RecentRefusals) != 1 || d.RecentRefusals[0].Count != 60 || d.RecentRefusals[0].Reason != "isolated" {
		t.Errorf("refusals %v, recent %+v", d.Refusals, d.RecentRefusals)
	}

	clk.Advance(time.Hour)
	r = h.Document().Dependencies[0].Rates
	if n := len(r.CallsPerSecond); n != statuspage.RatePoints {
		t.Errorf("after an hour the series has %d points, want %d", n, statuspage.RatePoints)
	}
	if want := t0.Add(40*time.Second + time.Hour - 590*time.Second); !r.Start.Equal(want) {
		t.Errorf("after an hour the series starts at %v, want %v (ten minutes back)", r.Start, want)
	}
}

// TestDocumentTripAndPolicy: the document carries the window that tripped,
// the cause, the policy's thresholds, the tools and the breaker's
// creation time.
func TestDocumentTripAndPolicy(t *testing.T) {
	reg, clk := fakeRegistry(t, registry.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 2, CountWindow: 50, MaxConcurrent: 4, NoJitter: true}))
	clk.Advance(time.Second)
	b := mustGet(t, reg, "billing-api")
	h, _ := newPage(t, reg, statuspage.WithTools(map[registry.Key][]string{"billing-api": {"list_invoices", "get_invoice", "get_invoice"}}))
	calls(clk, b, 1, 0, registry.Success)
	calls(clk, b, 2, 0, registry.Failure)
	d := h.Document().Dependencies[0]
	want := statuspage.Window{Requests: 3, Successes: 1, Failures: 2, ConsecutiveFailures: 2}
	if d.LastTrip == nil || d.LastTrip.Window != want || d.LastTrip.Cause != "trip" || d.Cause != "trip" {
		t.Errorf("last trip %+v cause %q, want %+v by trip", d.LastTrip, d.Cause, want)
	}
	if p := d.Policy; p.ConsecutiveFailures != 2 || p.FailureRate != 0.5 || p.CountWindow != 50 || p.MaxConcurrent != 4 || p.OpenSeconds != 30 {
		t.Errorf("policy %+v", p)
	}
	if strings.Join(d.Tools, ",") != "get_invoice,list_invoices" || !d.CreatedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("tools %v created %v", d.Tools, d.CreatedAt)
	}
	b.Reset()
	if d := h.Document().Dependencies[0]; d.Cause != "" || d.LastTrip == nil {
		t.Errorf("after a reset: cause %q, last trip %+v (kept as history)", d.Cause, d.LastTrip)
	}
}

func TestWithToolsListsEveryProblem(t *testing.T) {
	reg, _ := fakeRegistry(t)
	_, err := statuspage.New(reg, statuspage.WithTools(map[registry.Key][]string{
		"": {"x"}, "billing-api": {"", strings.Repeat("x", 201), "ok"}, "search-api": make([]string, 300),
	}))
	if err == nil {
		t.Fatal("invalid tools accepted")
	}
	for _, want := range []string{`invalid dependency key ""`, `"billing-api": tool 0`, `"billing-api": tool 1`, `"search-api" has 300 tools`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestPageWithoutJavaScript: the server-rendered page names the time it
// shows, with its zone, says so to a reader without JavaScript, counts in
// the singular for one dependency, tells isolated from open and shows the
// tripping window.
func TestPageWithoutJavaScript(t *testing.T) {
	reg, clk := fakeRegistry(t, registry.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 1, NoJitter: true}))
	b := mustGet(t, reg, "billing-api")
	_, srv := newPage(t, reg)
	clk.Advance(3 * time.Second)
	calls(clk, b, 1, 0, registry.Failure)
	_, body := get(t, srv.URL+"/breakers/")
	for _, want := range []string{
		`as of <time datetime="2026-12-01T12:00:03Z">2026-12-01 12:00:03 UTC</time>`,
		"<noscript>", "1 dependency, 1 not closed",
		`0 / 1 / 0 <span class="at-trip">at the trip</span>`,
		"Tripped by 0 ok / 1 failed / 0 excluded, 1 failure in a row",
		`<span class="state open">open</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	mustGet(t, reg, "search-api").Isolate()
	_, body = get(t, srv.URL+"/breakers/")
	if !strings.Contains(body, `<span class="state isolated">isolated</span>`) || !strings.Contains(body, "2 dependencies, 2 not closed") {
		t.Error("the isolated dependency is not shown as isolated")
	}
	if m := regexp.MustCompile(`<td>(\d\d:\d\d:\d\d[^<]*)</td>`).FindStringSubmatch(body); m != nil {
		t.Errorf("a transition time without a date and zone: %q", m[1])
	}
}

// TestDocsStatusExampleIsComplete: the status.json example in
// docs/dashboards.md has every member a real document has (with every
// optional part present), and none it lacks but the optional ones.
func TestDocsStatusExampleIsComplete(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "dashboards.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(md), "### The document, `adkbreaker.status/v1`")
	if !ok {
		t.Fatal("docs/dashboards.md has no status document section")
	}
	_, after, _ = strings.Cut(after, "```json\n")
	block, _, _ := strings.Cut(after, "```")
	var example any
	if err := json.Unmarshal([]byte(block), &example); err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}

	reg, clk := fakeRegistry(t, registry.WithPolicy("billing-api", registry.Policy{NoJitter: true}))
	b := mustGet(t, reg, "billing-api")
	h, _ := newPage(t, reg, statuspage.WithTools(map[registry.Key][]string{"billing-api": {"get_invoice"}}),
		statuspage.WithFleet(func() (bool, string, map[string]uint64) { return true, "", map[string]uint64{"published": 1} }),
		statuspage.WithThrottles(func(registry.Key) (float64, uint64, bool) { return 0.25, 3, true }))
	calls(clk, b, 5, time.Millisecond, registry.Failure)
	calls(clk, b, 1, 0, registry.Success)
	clk.Advance(time.Second)
	raw, err := json.Marshal(h.Document())
	if err != nil {
		t.Fatal(err)
	}
	var real any
	if err := json.Unmarshal(raw, &real); err != nil {
		t.Fatal(err)
	}
	optional := map[string]bool{"last_error": true, "count_window": true, "slow_call_seconds": true, "max_concurrent": true}
	var walk func(path string, ex, re any)
	walk = func(path string, ex, re any) {
		switch r := re.(type) {
		case map[string]any:
			e, ok := ex.(map[string]any)
			if !ok {
				t.Errorf("%s: the example has %T, the document an object", path, ex)
				return
			}
			if strings.HasSuffix(path, ".counters") {
				return // the fleet's counter names are its own
			}
			for k, v := range r {
				if ev, ok := e[k]; ok {
					walk(path+"."+k, ev, v)
				} else {
					t.Errorf("the example lacks %s.%s", path, k)
				}
			}
			for k := range e {
				if _, ok := r[k]; !ok && !optional[k] {
					t.Errorf("the example has %s.%s, which the document does not", path, k)
				}
			}
		case []any:
			e, ok := ex.([]any)
			if ok && len(e) > 0 && len(r) > 0 {
				walk(path+"[0]", e[0], r[0])
			}
		}
	}
	walk("$", example, real)
}

// TestLatencySamplingFollowsThePage: the page switches the registry's
// latency sampling on for the dependencies it shows, and off at Close
// (a document built after Close does not switch it on again).
func TestLatencySamplingFollowsThePage(t *testing.T) {
	reg, clk := fakeRegistry(t)
	b := mustGet(t, reg, "billing-api")
	calls(clk, b, 2, time.Millisecond, registry.Success)
	if n := b.Latencies().Total(); n != 0 {
		t.Fatalf("%d latencies measured without a page", n)
	}
	h, err := statuspage.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	calls(clk, b, 3, time.Millisecond, registry.Success)
	if n := b.Latencies().Total(); n != 3 {
		t.Errorf("%d of 3 calls measured with the page", n)
	}
	h.Close()
	h.Document()
	calls(clk, b, 3, time.Millisecond, registry.Success)
	if n := b.Latencies().Total(); n != 3 {
		t.Errorf("%d calls measured, want still 3 after Close", n)
	}
}
