package statuspage_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adkbreaker/adkbreaker/statuspage"
)

// TestFleetSection: with WithFleet the document and the page carry the
// fleet's sharing state and counters, read on every render; names that are
// not plain identifiers never reach either; without WithFleet there is no
// fleet member and the section is hidden. A fleet that is not sharing does
// not degrade the page's health.
func TestFleetSection(t *testing.T) {
	reg, _ := newRegistry(t)
	if _, err := reg.Get("billing-api"); err != nil {
		t.Fatal(err)
	}
	var sharing atomic.Bool
	sharing.Store(true)
	status := func() (bool, string, map[string]uint64) {
		if sharing.Load() {
			return true, "", map[string]uint64{"published": 3, "received": 7, "dropped.stale": 1}
		}
		return false, "timeout", map[string]uint64{
			"published": 3, "received": 7, "dropped.stale": 1,
			`<img src=x onerror=alert(1)>`: 9, "https://redis.internal:6379": 9,
		}
	}
	_, srv := newPage(t, reg, statuspage.WithFleet(status))

	var doc statuspage.Document
	_, body := get(t, srv.URL+"/breakers/status.json")
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Fleet == nil || !doc.Fleet.Sharing || doc.Fleet.Counters["received"] != 7 || doc.Fleet.Counters["dropped.stale"] != 1 {
		t.Fatalf("fleet section = %+v", doc.Fleet)
	}
	_, html := get(t, srv.URL+"/breakers/")
	for _, want := range []string{`<section id="fleet">`, "sharing through Redis", `<td class="name">received</td><td class="num">7</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	sharing.Store(false) // read again on the next render
	_, body = get(t, srv.URL+"/breakers/status.json")
	doc = statuspage.Document{}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Fleet.Sharing || doc.Fleet.LastError != "timeout" {
		t.Errorf("fleet section after Redis went away = %+v", doc.Fleet)
	}
	if doc.Health != "pass" {
		t.Errorf("health = %q: a fleet that is not sharing must not degrade the page", doc.Health)
	}
	if len(doc.Fleet.Counters) != 3 {
		t.Errorf("counters %v: names that are not identifiers must be left out", doc.Fleet.Counters)
	}
	_, html = get(t, srv.URL+"/breakers/")
	if !strings.Contains(html, "breaking on its own (Redis: timeout)") || strings.Contains(html, "redis.internal") || strings.Contains(html, "alert(1)") {
		t.Error("page after Redis went away: wrong summary, or a counter name that is not an identifier was rendered")
	}

	_, plain := newPage(t, reg)
	_, body = get(t, plain.URL+"/breakers/status.json")
	if strings.Contains(body, `"fleet"`) {
		t.Errorf("document without WithFleet has a fleet member: %s", body)
	}
	if _, html := get(t, plain.URL+"/breakers/"); !strings.Contains(html, `<section id="fleet" hidden>`) {
		t.Error("fleet section not hidden without WithFleet")
	}
}
