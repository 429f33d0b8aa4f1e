package statuspage_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// serveFake serves a page over reg (a registry on a fake clock) and
// returns its URL. Event streams refresh every 200ms of real time, so the
// page follows the fake clock as the test moves it.
func serveFake(t *testing.T, reg *registry.Registry, opts ...statuspage.Option) string {
	t.Helper()
	_, srv := newPage(t, reg, append([]statuspage.Option{statuspage.WithRefresh(200 * time.Millisecond)}, opts...)...)
	return srv.URL + "/breakers/"
}

func fakeRegistry(t *testing.T, opts ...registry.Option) (*registry.Registry, *registrytest.FakeClock) {
	t.Helper()
	clk := registrytest.NewFakeClock(t0)
	reg, err := registry.New(append([]registry.Option{registry.WithClock(clk), registry.WithRand(func() float64 { return 0 })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg, clk
}

func mustGet(t *testing.T, reg *registry.Registry, k registry.Key) *registry.Breaker {
	t.Helper()
	b, err := reg.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// calls runs n calls that take d each on the fake clock and end with o.
func calls(clk *registrytest.FakeClock, b *registry.Breaker, n int, d time.Duration, o registry.Outcome) {
	for range n {
		tk, dec := b.Admit()
		clk.Advance(d)
		if dec.Allowed {
			tk.Done(o)
		}
	}
}

const live = `document.getElementById("live").textContent === "live"`

// TestBrowserIsolatedAndOpenLookDifferent: an isolated dependency is not
// shown as one more open one: its pill says isolated, in another colour
// and pattern, and its row and timeline lane are marked.
func TestBrowserIsolatedAndOpenLookDifferent(t *testing.T) {
	ctx := chromium(t)
	reg, clk := fakeRegistry(t)
	open, iso := mustGet(t, reg, "billing-api"), mustGet(t, reg, "search-api")
	mustGet(t, reg, "weather-api")
	page := serveFake(t, reg)
	clk.Advance(3 * time.Second)
	open.Trip(90*time.Second, registry.CauseRetryHint)
	iso.Isolate()
	clk.Advance(time.Second)

	do(t, ctx, chromedp.Navigate(page), poll(live),
		chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".open")),
		chromedp.WaitVisible(chromedp.CSS(stateSel("search-api")+".isolated")))
	openText, isoText := text(t, ctx, stateSel("billing-api")), text(t, ctx, stateSel("search-api"))
	style := func(dep string) string {
		return eval[string](t, ctx, `(function (e) { var s = getComputedStyle(e); return s.backgroundColor + "|" + s.backgroundImage + "|" + s.outlineStyle; })(document.querySelector('`+stateSel(dep)+`'))`)
	}
	if openText != "open" || isoText != "isolated" {
		t.Errorf("pills read %q and %q, want open and isolated", openText, isoText)
	}
	if so, si := style("billing-api"), style("search-api"); so == si {
		t.Errorf("open and isolated pills are styled alike: %s", so)
	}
	if c := eval[string](t, ctx, `document.querySelector('#deps tr[data-dep="search-api"] .countdown').textContent`); c != "until reset" {
		t.Errorf("isolated countdown %q", c)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline rect.isolated").length`); n != 1 {
		t.Errorf("%d isolated segments on the timeline, want 1", n)
	}
	if h := text(t, ctx, `#tripped .card[data-dep="search-api"] h3`); !strings.Contains(h, "isolated by an operator") {
		t.Errorf("what-tripped-it card of the isolated dependency: %q", h)
	}
	// Four seconds old: its lane starts at its creation, not a minute ago.
	lane := eval[float64](t, ctx, `(function () { var r = document.querySelector('#timeline rect'); return parseFloat(r.getAttribute("x")); })()`)
	if lane < 900 {
		t.Errorf("the first lane starts at x=%v: a 4 s old breaker drawn over the minute before it existed", lane)
	}
	if c := text(t, ctx, "#counts"); !strings.Contains(c, "3 dependencies, 2 not closed") {
		t.Errorf("summary %q", c)
	}
	screenshot(t, ctx, "statuspage-isolated.png")
}

// TestBrowserShowsTheTrippingWindow: right after a trip the row shows the
// window that tripped (not the open state's 0 / 0 / 0), and the "what
// tripped it" panel names the cause, the window, the thresholds, the tools
// and the refusals since.
func TestBrowserShowsTheTrippingWindow(t *testing.T) {
	ctx := chromium(t)
	reg, clk := fakeRegistry(t, registry.WithPolicy("billing-api", registry.Policy{ConsecutiveFailures: 3, MinCalls: 10, OpenFor: time.Minute, NoJitter: true}))
	b := mustGet(t, reg, "billing-api")
	page := serveFake(t, reg, statuspage.WithTools(map[registry.Key][]string{"billing-api": {"list_invoices", "get_invoice"}}))
	do(t, ctx, chromedp.Navigate(page), poll(live), poll(`document.getElementById("tripped").hidden`))
	if c := text(t, ctx, "#counts"); !strings.Contains(c, "1 dependency,") {
		t.Errorf("summary %q: want the singular", c)
	}

	calls(clk, b, 2, 10*time.Millisecond, registry.Success)
	calls(clk, b, 3, 10*time.Millisecond, registry.Failure) // trips
	calls(clk, b, 4, 0, registry.Success)                   // refused
	if b.State() != registry.StateOpen {
		t.Fatal("not tripped")
	}
	card := `#tripped .card[data-dep="billing-api"]`
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".open")),
		poll(`!!document.querySelector('`+card+` .refusals')`))
	if w := text(t, ctx, `#deps tr[data-dep="billing-api"] .window`); w != "2 / 3 / 0 at the trip" {
		t.Errorf("window right after the trip %q, want the tripping window 2 / 3 / 0", w)
	}
	tw := text(t, ctx, card+" .trip-window")
	if !strings.Contains(tw, "(trip) by 2 ok / 3 failed / 0 excluded, 3 failures in a row") {
		t.Errorf("trip window in the panel: %q", tw)
	}
	if p := text(t, ctx, card+" .policy"); !strings.Contains(p, "3 failures in a row or 50 % failed of ≥ 10 calls in 60 s; holds 60 s") {
		t.Errorf("thresholds in the panel: %q", p)
	}
	if r := text(t, ctx, card+" .refusals"); !strings.Contains(r, "circuit_open (trip) × 4") {
		t.Errorf("refusals in the panel: %q", r)
	}
	if tools := text(t, ctx, `#deps tr[data-dep="billing-api"] .tools`); tools != "tools: get_invoice, list_invoices" {
		t.Errorf("tools %q", tools)
	}
	zoned := regexp.MustCompile(`\d\d:\d\d:\d\d [A-Z][A-Za-z0-9+:\-]*`)
	for _, sel := range []string{"#asof", "#transitions tbody td", card + " h3"} {
		if s := text(t, ctx, sel); !zoned.MatchString(s) {
			t.Errorf("%s: %q has no time with a zone", sel, s)
		}
	}
	screenshot(t, ctx, "statuspage-tripped.png")
}

// TestBrowserSparklinesMoveWithTraffic: the rate sparklines follow the
// registry's counts interval by interval: calls, failures, latency,
// short-circuits and bulkhead rejections.
func TestBrowserSparklinesMoveWithTraffic(t *testing.T) {
	ctx := chromium(t)
	reg, clk := fakeRegistry(t,
		registry.WithPolicy("billing-api", registry.Policy{DisableConsecutiveFailures: false, ConsecutiveFailures: 1 << 20, DisableFailureRate: true}),
		registry.WithPolicy("search-api", registry.Policy{MaxConcurrent: 1}))
	b, s := mustGet(t, reg, "billing-api"), mustGet(t, reg, "search-api")
	page := serveFake(t, reg)
	do(t, ctx, chromedp.Navigate(page), poll(live))
	spark := func(dep, metric string) string {
		return `document.querySelector('#rates tr[data-dep="` + dep + `"] svg[data-metric="` + metric + `"]')`
	}
	values := func(dep, metric string) string {
		return eval[string](t, ctx, spark(dep, metric)+`.getAttribute("data-values")`)
	}
	points := func(dep, metric string) string {
		return eval[string](t, ctx, `Array.from(`+spark(dep, metric)+`.querySelectorAll("polyline, circle")).map(function (e) { return e.getAttribute("points") || e.getAttribute("cy"); }).join("|")`)
	}
	hasPoint := func(dep, metric, v string) chromedp.Action[chromedp.Void] {
		return poll(spark(dep, metric) + `.getAttribute("data-values").split(",").indexOf("` + v + `") >= 0`)
	}

	// Interval 1: 50 calls in 10 s, 20 ms each.
	calls(clk, b, 50, 20*time.Millisecond, registry.Success)
	clk.Advance(10*time.Second - 50*20*time.Millisecond)
	do(t, ctx, hasPoint("billing-api", "calls", "5"), hasPoint("billing-api", "failure", "0"))
	before := points("billing-api", "calls")
	if p99 := values("billing-api", "p99"); !strings.HasPrefix(p99, "24.576,") { // 20 ms is in the bucket up to 24.576 ms
		t.Errorf("p99 series %q, want 24.576 ms first", p99)
	}

	// Interval 2: 20 failing calls of 100 ms, and 30 refused by the bulkhead.
	calls(clk, b, 20, 100*time.Millisecond, registry.Failure)
	held, _ := s.Admit()
	calls(clk, s, 30, 0, registry.Success)
	held.Done(registry.Success)
	clk.Advance(10*time.Second - 20*100*time.Millisecond)
	do(t, ctx, hasPoint("billing-api", "calls", "2"), hasPoint("billing-api", "failure", "100"),
		hasPoint("billing-api", "p99", "131.072"), hasPoint("search-api", "rejections", "3"))
	if after := points("billing-api", "calls"); after == before {
		t.Errorf("the calls sparkline did not move: %s", after)
	}

	// Interval 3: isolated, 40 calls short-circuited.
	b.Isolate()
	calls(clk, b, 40, 0, registry.Success)
	clk.Advance(10 * time.Second)
	do(t, ctx, hasPoint("billing-api", "short_circuits", "4"))
	if v := values("billing-api", "calls"); !strings.HasPrefix(v, "5,2,0") {
		t.Errorf("calls series %q, want 5,2,0,…", v)
	}
	if v := values("billing-api", "failure"); !strings.HasPrefix(v, "0,100,,") {
		t.Errorf("failure series %q, want 0,100, then no value while nothing ran", v)
	}
	// Interval 4, half way: search-api busy, a few of its calls failing.
	calls(clk, s, 40, 50*time.Millisecond, registry.Success)
	calls(clk, s, 4, 200*time.Millisecond, registry.Failure) // not enough to trip
	clk.Advance(8*time.Second - 2800*time.Millisecond)
	do(t, ctx, hasPoint("search-api", "calls", "5.5")) // 44 calls in the 8 s so far
	screenshot(t, ctx, "statuspage-rates.png")
}

// TestBrowserCSPBlocksInjectedScripts: the page's own script runs by its
// per-response nonce; the policy has no 'unsafe-inline', so markup
// injected into the page (an inline handler, a script element) does not
// run, and the browser reports the violations.
func TestBrowserCSPBlocksInjectedScripts(t *testing.T) {
	reg, _ := fakeRegistry(t)
	mustGet(t, reg, "billing-api")
	page := serveFake(t, reg)
	nonces := map[string]bool{}
	for range 2 {
		resp, body := get(t, page)
		csp := resp.Header.Get("Content-Security-Policy")
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("CSP %q allows inline code", csp)
		}
		m := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]{20,})'`).FindStringSubmatch(csp)
		if m == nil {
			t.Fatalf("CSP %q has no script nonce", csp)
		}
		if !strings.Contains(body, `<script nonce="`+m[1]+`">`) {
			t.Error("the page's script does not carry the response's nonce")
		}
		nonces[m[1]] = true
	}
	if len(nonces) != 2 {
		t.Error("two responses share a nonce")
	}

	ctx := chromium(t)
	do(t, ctx, chromedp.Navigate(page), poll(live)) // the page's own script runs
	eval[bool](t, ctx, `window.__violations = []; document.addEventListener("securitypolicyviolation", function (e) { window.__violations.push(e.violatedDirective); }); true`)
	eval[bool](t, ctx, `document.body.insertAdjacentHTML("beforeend", '<img id="inj" src="nope.png" onerror="window.__injected = 1">');
		var s = document.createElement("script"); s.textContent = "window.__injected = 2"; document.body.appendChild(s); true`)
	do(t, ctx, poll(`window.__violations.length >= 2`))
	if injected := eval[bool](t, ctx, `window.__injected !== undefined`); injected {
		t.Error("an injected inline script ran")
	}
	if v := eval[string](t, ctx, `window.__violations.join(",")`); !strings.Contains(v, "script-src") {
		t.Errorf("violations %q, want script-src ones", v)
	}
}

// TestBrowserIsolateAsksAndReports: Isolate asks for confirmation (and a
// token) in the page before it acts; Cancel changes nothing; a wrong token
// is reported as such; a confirmed isolate is carried out and reported.
func TestBrowserIsolateAsksAndReports(t *testing.T) {
	ctx := chromium(t)
	reg, _ := fakeRegistry(t)
	b := mustGet(t, reg, "billing-api")
	page := serveFake(t, reg, statuspage.WithActions(token))
	click := func(sel string) {
		t.Helper()
		eval[bool](t, ctx, `document.querySelector('`+sel+`').click(); true`) // in one evaluation: the rows re-render
	}
	do(t, ctx, chromedp.Navigate(page), poll(live), chromedp.WaitVisible(chromedp.CSS(`#deps tr[data-dep="billing-api"] button.isolate`)))

	click(`#deps tr[data-dep="billing-api"] button.isolate`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if q := text(t, ctx, "#confirm-text"); !strings.Contains(q, "Isolate billing-api?") {
		t.Errorf("confirmation %q", q)
	}
	if b.State() != registry.StateClosed {
		t.Fatal("isolated before it was confirmed")
	}
	screenshot(t, ctx, "statuspage-confirm.png")
	do(t, ctx, chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
	if b.State() != registry.StateClosed {
		t.Fatal("Cancel isolated it")
	}
	click(`#deps tr[data-dep="billing-api"] button.isolate`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#confirm-token")),
		chromedp.SendKeys(chromedp.CSS("#confirm-token"), "\x1b"), // Escape
		chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
	if b.State() != registry.StateClosed {
		t.Fatal("Escape isolated it")
	}

	click(`#deps tr[data-dep="billing-api"] button.isolate`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#confirm-token")),
		chromedp.SendKeys(chromedp.CSS("#confirm-token"), "not-the-token-at-all"),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		poll(`document.getElementById("action-result").className === "err"`))
	if r := text(t, ctx, "#action-result"); r != "Wrong token: nothing changed." {
		t.Errorf("result of a wrong token %q", r)
	}
	if b.State() != registry.StateClosed {
		t.Fatal("a wrong token isolated it")
	}

	click(`#deps tr[data-dep="billing-api"] button.isolate`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#confirm-token")))
	if v := eval[string](t, ctx, `document.getElementById("confirm-token").value`); v != "" {
		t.Errorf("a wrong token was remembered: %q", v)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#confirm-token"), token),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		poll(`document.getElementById("action-result").className === "ok" && /isolated at/.test(document.getElementById("action-result").textContent)`),
		chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".isolated")))
	if r := text(t, ctx, "#action-result"); r != "billing-api isolated at 12:00:00 UTC: now isolated." {
		t.Errorf("result %q", r)
	}
	if !b.Status().Isolated {
		t.Error("confirmed isolate did not isolate")
	}
	screenshot(t, ctx, "statuspage-isolate-done.png")

	// The token is remembered for the session: Reset asks again, prefilled.
	click(`#deps tr[data-dep="billing-api"] button.reset`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#confirm")), chromedp.Click(chromedp.CSS("#confirm-ok")),
		chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".closed")))
	if b.State() != registry.StateClosed {
		t.Error("confirmed reset did not reset")
	}
	if status := eval[int](t, ctx, `fetch("actions/isolate", {method: "POST", body: new URLSearchParams({dependency: "billing-api"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise); status != http.StatusUnauthorized {
		t.Errorf("POST without the token = %d", status)
	}
}

var _ = context.Background
