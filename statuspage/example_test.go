package statuspage_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/statuspage"
)

// A status page over the plugin's registry, mounted under a prefix; its
// JSON document says which dependencies are unavailable.
func ExampleNew() {
	reg := registry.MustNew()
	b, _ := reg.Get("billing-api")
	b.Trip(30*time.Second, registry.CauseRetryHint) // the server said: back in 30 s

	page, err := statuspage.New(reg)
	if err != nil {
		panic(err)
	}
	defer page.Close()

	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
	var doc statuspage.Document
	_ = json.Unmarshal(rec.Body.Bytes(), &doc)
	d := doc.Dependencies[0]
	fmt.Println(doc.Health, d.Name, d.State, d.RetryAfterSeconds > 29)
	// Output: warn billing-api open true
}

// A replica of a fleet shows its sharing state; (*fleet.Fleet).Status has
// the shape WithFleet takes.
func ExampleWithFleet() {
	reg := registry.MustNew()
	status := func() (bool, string, map[string]uint64) { // f.Status for a *fleet.Fleet f
		return false, "refused", map[string]uint64{"published": 3, "received": 5}
	}
	page, err := statuspage.New(reg, statuspage.WithFleet(status))
	if err != nil {
		panic(err)
	}
	defer page.Close()
	f := page.Document().Fleet
	fmt.Println(f.Sharing, f.LastError, f.Counters["received"])
	// Output: false refused 5
}
