package fleet_test

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
	"github.com/google/go-cmp/cmp"
)

// TestStatusPageShowsTheFleet: statuspage.WithFleet(f.Status) puts a real
// replica's fleet state on its status page: sharing, and every counter of
// Stats under a name the page accepts, with the trip another replica
// published counted as received.
func TestStatusPageShowsTheFleet(t *testing.T) {
	srv := redisServer(t)
	rs := newReplicas(t, srv.Addr(), 2, testPolicy(time.Minute))
	rs[0].fail(t)
	rs[1].await(t, 5*time.Second, "fleet_open", isCause(registry.CauseFleetOpen))
	// rs[1] may have adopted the trip from its first resync (it runs once
	// the subscription is up, and may read Redis after rs[0] stored the
	// trip) before the message arrived: wait for the message too.
	waitUntil(t, 5*time.Second, "rs[0]'s trip received on the channel", func() bool { return rs[1].f.Stats().Received >= 1 })

	page, err := statuspage.New(rs[1].reg, statuspage.WithFleet(rs[1].f.Status), statuspage.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
	var doc statuspage.Document
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	_, _, counters := rs[1].f.Status()
	switch {
	case doc.Fleet == nil:
		t.Fatal("no fleet section")
	case !doc.Fleet.Sharing || doc.Fleet.LastError != "":
		t.Errorf("fleet section %+v, want sharing with no error", doc.Fleet)
	case doc.Fleet.Counters["received"] < 1:
		t.Errorf("received = %d after another replica's trip was adopted", doc.Fleet.Counters["received"])
	case len(doc.Fleet.Counters) != len(counters):
		t.Errorf("the page shows %d of the fleet's %d counters: %v", len(doc.Fleet.Counters), len(counters), doc.Fleet.Counters)
	}
	if len(doc.Dependencies) != 1 || doc.Dependencies[0].State != "open" {
		t.Errorf("dependencies %+v, want %s open", doc.Dependencies, dep)
	}
}

// TestStatusHasEveryCounter: Status names every counter of Stats (each
// uint64 field, and each reason of each map of drops), so a counter added
// to Stats reaches the status page.
func TestStatusHasEveryCounter(t *testing.T) {
	f, err := fleet.New(registry.MustNew(), fleet.WithAddress("127.0.0.1:1"), fleet.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, counters := f.Status()
	want := 0
	v := reflect.ValueOf(f.Stats())
	for i := range v.NumField() {
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Uint64:
			want++
		case reflect.Map:
			want += fv.Len()
		}
	}
	if len(counters) != want {
		t.Fatalf("Status has %d counters, Stats %d: %v", len(counters), want, counters)
	}
}

// TestStatusCounterNamesAreTheDocumentedOnes: the names Status promises
// (its doc comment) are exactly the ones it returns, publish_failed among
// the drops of decisions as in the adkbreaker.fleet.messages.dropped metric.
func TestStatusCounterNamesAreTheDocumentedOnes(t *testing.T) {
	f, err := fleet.New(registry.MustNew(), fleet.WithAddress("127.0.0.1:1"), fleet.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, counters := f.Status()
	var got []string
	for k := range counters {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{"published", "publish_failed", "received", "applied", "resync_applied",
		"leases_won", "leases_lost", "resyncs", "reconnects", "redis_errors",
		"outcomes_published", "outcomes_received", "fleet_rate_trips", "generation_repairs"}
	for _, r := range []string{"stale", "duplicate", "own", "malformed", "unknown_dependency", "queue_full", "redis_unavailable", "publish_failed"} {
		want = append(want, "dropped."+r)
	}
	for _, r := range []string{"own", "duplicate", "stale", "malformed", "unknown_dependency", "redis_unavailable", "publish_failed", "over_cap", "sharing_off"} {
		want = append(want, "outcomes_dropped."+r)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Status counter names (-documented +returned):\n%s", diff)
	}
	if _, ok := f.Stats().Dropped["publish_failed"]; !ok {
		t.Error("Stats.Dropped has no publish_failed")
	}
}
