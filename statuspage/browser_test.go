package statuspage_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/adkbreaker/adkbreaker/internal/browsertest"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

func chromium(t *testing.T) context.Context { return browsertest.New(t, 90*time.Second) }

func screenshot(t *testing.T, ctx context.Context, name string) {
	browsertest.Screenshot(t, ctx, filepath.Join("..", "docs", "img"), name)
}

func serveRealClock(t *testing.T, opts ...statuspage.Option) (*registry.Registry, string) {
	t.Helper()
	reg := registry.MustNew()
	opts = append([]statuspage.Option{statuspage.WithLogger(slog.New(slog.DiscardHandler)), statuspage.WithRefresh(500 * time.Millisecond)}, opts...)
	h, err := statuspage.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/breakers/", http.StripPrefix("/breakers", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); srv.Close() }) // Close ends the event streams first
	return reg, srv.URL + "/breakers/"
}

func stateSel(dep string) string { return `#deps tr[data-dep="` + dep + `"] .state` }

// eval runs a JavaScript expression in the page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// do runs steps, failing the test on error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text returns an element's text, read in one script evaluation: the page
// replaces its rows on every update, so finding a node and then reading it
// (chromedp.Text) can race a refresh and lose the node in between.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function (e) { return e ? e.textContent : "\u0000missing"; })(document.querySelector(`+string(q)+`))`))
	if err != nil || v == "\x00missing" {
		t.Fatalf("text of %s: %q, %v", sel, v, err)
	}
	return v
}

// poll waits until a JavaScript expression is true in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, tg)
		return err
	})
}

// TestBrowserShowsTransitionsLive drives the page in a real Chromium: a
// dependency turns from closed to open and back without a reload, the
// countdown decreases, and there are no operator buttons by default.
func TestBrowserShowsTransitionsLive(t *testing.T) {
	ctx := chromium(t)
	reg, page := serveRealClock(t)
	b, err := reg.Get("billing-api")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Get("search-api"); err != nil {
		t.Fatal(err)
	}

	do(t, ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".closed")),
		poll(`document.getElementById("live").textContent === "live"`),
	)
	eval[int](t, ctx, `window.__noReload = 42`) // a marker a reload would erase
	if buttons := eval[int](t, ctx, `document.querySelectorAll("button").length`); buttons != 0 {
		t.Errorf("%d buttons on the page although operator actions are disabled", buttons)
	}
	screenshot(t, ctx, "statuspage-closed.png")

	b.Trip(90*time.Second, registry.CauseRetryHint)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".open")))
	first := text(t, ctx, `#deps tr[data-dep="billing-api"] .countdown`)
	secs := func(s string) int {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(s), " s"))
		if err != nil {
			t.Fatalf("countdown %q: %v", s, err)
		}
		return n
	}
	start := secs(first)
	if start < 80 || start > 90 {
		t.Fatalf("countdown right after a 90 s trip = %q", first)
	}
	// The countdown runs in the browser between updates.
	do(t, ctx, poll(`parseInt(document.querySelector('#deps tr[data-dep="billing-api"] .countdown').textContent) < `+strconv.Itoa(start)))
	if later := text(t, ctx, `#deps tr[data-dep="billing-api"] .countdown`); secs(later) >= start {
		t.Errorf("countdown did not decrease: %q then %q", first, later)
	}
	if lanes := eval[int](t, ctx, `document.querySelectorAll("#timeline svg rect").length`); lanes < 3 {
		t.Errorf("timeline has %d segments, want closed+open for billing-api and closed for search-api", lanes)
	}
	screenshot(t, ctx, "statuspage-open.png")

	reg.Reset("billing-api")
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(stateSel("billing-api")+".closed")))
	if marker := eval[int](t, ctx, `window.__noReload`); marker != 42 {
		t.Error("the page reloaded")
	}
}

// TestBrowserOperatorActionsNeedTheToken: with actions enabled the buttons
// exist, and a POST without the token gets 401 and changes nothing.
func TestBrowserOperatorActionsNeedTheToken(t *testing.T) {
	ctx := chromium(t)
	reg, page := serveRealClock(t, statuspage.WithActions(token))
	if _, err := reg.Get("billing-api"); err != nil {
		t.Fatal(err)
	}
	do(t, ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`#deps tr[data-dep="billing-api"] button.isolate`)),
	)
	buttons := eval[int](t, ctx, `document.querySelectorAll("button.isolate, button.reset").length`)
	status := eval[int](t, ctx, `fetch("actions/isolate", {method: "POST", body: new URLSearchParams({dependency: "billing-api"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise)
	if buttons != 2 {
		t.Errorf("%d operator buttons, want isolate and reset", buttons)
	}
	if status != http.StatusUnauthorized {
		t.Errorf("POST without the token = %d, want 401", status)
	}
	if b, _ := reg.Lookup("billing-api"); b.State() != registry.StateClosed {
		t.Error("an unauthorised POST changed the breaker")
	}
	screenshot(t, ctx, "statuspage-actions.png")
}

// TestBrowserRendersHostileNamesAsText: a dependency named like markup shows
// as text and runs nothing.
func TestBrowserRendersHostileNamesAsText(t *testing.T) {
	ctx := chromium(t)
	reg, page := serveRealClock(t)
	hostile := `<img src=x onerror="window.__xss=1">`
	b, err := reg.Get(registry.Key(hostile))
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx,
		chromedp.Navigate(page),
		poll(`document.getElementById("live").textContent === "live"`),
	)
	b.Trip(time.Minute, registry.CauseRetryHint) // re-rendered by the script, not the server
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#deps .state.open`)))
	shown := text(t, ctx, `#deps span.name`)
	images := eval[int](t, ctx, `document.querySelectorAll("img").length`)
	xss := eval[bool](t, ctx, `window.__xss === 1`)
	if shown != hostile || images != 0 || xss {
		t.Errorf("hostile name: shown %q, %d images, script ran: %v", shown, images, xss)
	}
}

// TestBrowserShowsFleetSharingLive: the fleet section follows the replica's
// sharing state and counters over the event stream, without a reload.
func TestBrowserShowsFleetSharingLive(t *testing.T) {
	ctx := chromium(t)
	var sharing atomic.Bool
	var received atomic.Uint64
	sharing.Store(true)
	reg, page := serveRealClock(t, statuspage.WithFleet(func() (bool, string, map[string]uint64) {
		last := ""
		if !sharing.Load() {
			last = "refused"
		}
		return sharing.Load(), last, map[string]uint64{"published": 2, "received": received.Load(), "leases_won": 1}
	}))
	if _, err := reg.Get("billing-api"); err != nil {
		t.Fatal(err)
	}
	do(t, ctx,
		chromedp.Navigate(page),
		poll(`document.getElementById("live").textContent === "live"`),
		poll(`document.getElementById("fleet-summary").textContent === "sharing through Redis"`),
	)
	eval[int](t, ctx, `window.__noReload = 7`)
	screenshot(t, ctx, "statuspage-fleet.png")

	received.Store(41)
	sharing.Store(false) // Redis went away: the next refresh shows it
	do(t, ctx,
		poll(`document.getElementById("fleet-summary").textContent === "breaking on its own (Redis: refused)"`),
		poll(`Array.from(document.querySelectorAll("#fleet-counters tr")).some(function (tr) { return tr.textContent === "received41"; })`),
	)
	if marker := eval[int](t, ctx, `window.__noReload`); marker != 7 {
		t.Error("the page reloaded")
	}
	if health := text(t, ctx, "#health"); health != "all available" {
		t.Errorf("health %q: a fleet that is not sharing must not degrade the page", health)
	}
}

// TestBrowserShowsThrottleLive: a dependency's throttle badge appears in
// its row when the throttle starts shedding, follows the probability and
// goes when it stops, over the event stream without a reload; the health
// stays "all available".
func TestBrowserShowsThrottleLive(t *testing.T) {
	ctx := chromium(t)
	var percent, shed atomic.Uint64
	reg, page := serveRealClock(t, statuspage.WithThrottles(func(k registry.Key) (float64, uint64, bool) {
		return float64(percent.Load()) / 100, shed.Load(), k == "model:primary"
	}))
	for _, k := range []registry.Key{"model:primary", "model:fallback"} {
		if _, err := reg.Get(k); err != nil {
			t.Fatal(err)
		}
	}
	badge := func(dep string) string {
		return `(function (e) { return e ? e.textContent + "|" + e.title : ""; })(document.querySelector('#deps tr[data-dep="` + dep + `"] .throttle'))`
	}
	do(t, ctx,
		chromedp.Navigate(page),
		poll(`document.getElementById("live").textContent === "live"`),
	)
	if b := eval[string](t, ctx, badge("model:primary")); b != "" {
		t.Errorf("badge %q before the throttle sheds anything", b)
	}
	eval[int](t, ctx, `window.__noReload = 7`)

	percent.Store(33)
	shed.Store(12)
	do(t, ctx, poll(badge("model:primary")+` === "throttling 33 %|adaptive throttle: 12 calls sent straight to the next endpoint"`))
	if b := eval[string](t, ctx, badge("model:fallback")); b != "" {
		t.Errorf("the fallback, which has no throttle, has a badge %q", b)
	}
	if health := text(t, ctx, "#health"); health != "all available" {
		t.Errorf("health %q: a throttle must not degrade the page", health)
	}

	percent.Store(0) // the storm is over
	do(t, ctx, poll(badge("model:primary")+` === ""`))
	if marker := eval[int](t, ctx, `window.__noReload`); marker != 7 {
		t.Error("the page reloaded")
	}
}
