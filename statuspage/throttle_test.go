package statuspage_test

import (
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// TestThrottleInTheDocument: with WithThrottles a dependency the source
// reports a throttle for carries it in the document, read on every render,
// and its row shows the badge while it sheds calls; a dependency without
// one has no throttle member; the first source that knows a key wins; a
// probability outside [0, 1] is left out; a throttle does not degrade the
// page's health.
func TestThrottleInTheDocument(t *testing.T) {
	reg, _ := newRegistry(t)
	for _, k := range []registry.Key{"model:primary", "model:fallback", "model:broken"} {
		if _, err := reg.Get(k); err != nil {
			t.Fatal(err)
		}
	}
	var prob atomic.Uint64 // math.Float64bits
	var shed atomic.Uint64
	prob.Store(math.Float64bits(1.0 / 3))
	shed.Store(12)
	first := func(k registry.Key) (float64, uint64, bool) {
		switch k {
		case "model:primary":
			return math.Float64frombits(prob.Load()), shed.Load(), true
		case "model:broken":
			return math.NaN(), 1, true
		}
		return 0, 0, false
	}
	second := func(k registry.Key) (float64, uint64, bool) { return 0.5, 99, k == "model:primary" }
	_, srv := newPage(t, reg, statuspage.WithThrottles(first), statuspage.WithThrottles(second))

	read := func() (map[string]json.RawMessage, statuspage.Document, string) {
		t.Helper()
		_, body := get(t, srv.URL+"/breakers/status.json")
		var doc statuspage.Document
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Dependencies []map[string]json.RawMessage `json:"dependencies"`
		}
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatal(err)
		}
		members := map[string]json.RawMessage{}
		for _, d := range raw.Dependencies {
			var name string
			_ = json.Unmarshal(d["name"], &name)
			members[name] = d["throttle"]
		}
		_, html := get(t, srv.URL+"/breakers/")
		return members, doc, html
	}

	members, doc, html := read()
	if got := string(members["model:primary"]); got != `{"reject_probability":0.3333333333333333,"rejections":12}` {
		t.Errorf("primary's throttle member = %s", got)
	}
	for _, k := range []string{"model:fallback", "model:broken"} {
		if m, ok := members[k]; ok && m != nil {
			t.Errorf("%s has a throttle member %s, want none", k, m)
		}
	}
	if doc.Health != "pass" {
		t.Errorf("health = %q: a throttle must not degrade the page", doc.Health)
	}
	if want := `<span class="throttle" title="adaptive throttle: 12 calls sent straight to the next endpoint">throttling 33 %</span>`; !strings.Contains(html, want) {
		t.Errorf("the page lacks %s", want)
	}
	if n := strings.Count(html, `class="throttle"`); n != 1 {
		t.Errorf("%d throttle badges rendered, want 1 (the primary's)", n)
	}

	prob.Store(math.Float64bits(0)) // the storm is over: still there, no badge
	shed.Store(13)
	members, _, html = read()
	if got := string(members["model:primary"]); got != `{"reject_probability":0,"rejections":13}` {
		t.Errorf("primary's throttle member after the storm = %s", got)
	}
	if strings.Contains(html, `class="throttle"`) {
		t.Error("a throttle that sheds nothing has a badge")
	}
}

// TestThrottleBadgeText: small probabilities are not shown as 0 %.
func TestThrottleBadgeText(t *testing.T) {
	reg, _ := newRegistry(t)
	if _, err := reg.Get("model:primary"); err != nil {
		t.Fatal(err)
	}
	_, srv := newPage(t, reg, statuspage.WithThrottles(func(registry.Key) (float64, uint64, bool) { return 0.001, 1, true }))
	if _, html := get(t, srv.URL+"/breakers/"); !strings.Contains(html, `title="adaptive throttle: 1 call sent straight to the next endpoint">throttling &lt;1 %</span>`) {
		t.Errorf("the page lacks the <1 %% badge:\n%s", html)
	}
}

// TestWithThrottlesWithoutSource: no source, or a nil one, is refused at
// New.
func TestWithThrottlesWithoutSource(t *testing.T) {
	reg, _ := newRegistry(t)
	ok := func(registry.Key) (float64, uint64, bool) { return 0, 0, false }
	for _, opt := range []statuspage.Option{statuspage.WithThrottles(), statuspage.WithThrottles(ok, nil)} {
		if _, err := statuspage.New(reg, opt); err == nil || !strings.Contains(err.Error(), "WithThrottles") {
			t.Errorf("New = %v, want a WithThrottles error", err)
		}
	}
}
