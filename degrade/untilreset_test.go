package degrade_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// An isolated dependency stays unavailable until an operator resets it: the
// payload, the annotation and the messages name no retry time.
func TestIsolatedNamesNoRetryTime(t *testing.T) {
	m := degrade.NewBuilder("billing-api", "get_invoice", 2, degrade.Extras{}).Build(degrade.ReasonIsolated, degrade.UntilReset, 1, nil)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "after_seconds") || !strings.Contains(string(data), `"retry":{"advised":false}`) {
		t.Fatalf("isolated payload: %s", data)
	}
	var decoded map[string]any
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, p := range []map[string]any{m, decoded} {
		info, ok := degrade.Parse(p)
		if !ok || info.Reason != degrade.ReasonIsolated || info.RetryAfterSeconds != 0 {
			t.Fatalf("Parse = %+v, %v", info, ok)
		}
	}
	if got := degrade.Annotate("Fetch.", degrade.UntilReset); strings.Contains(got, "retry in") || degrade.StripAnnotation(got) != "Fetch." {
		t.Fatalf("Annotate = %q", got)
	}
	if got := degrade.FinalMessage([]degrade.Unavailable{{Dependency: "billing-api", RetryAfter: degrade.UntilReset}}); strings.Contains(got, "try again in") {
		t.Fatalf("FinalMessage = %q", got)
	}
	if got := degrade.ModelUnavailableMessage(degrade.UntilReset); strings.Contains(got, "try again in") {
		t.Fatalf("ModelUnavailableMessage = %q", got)
	}
	if got := degrade.FinalMessage([]degrade.Unavailable{{Dependency: "a", RetryAfter: 30 * time.Second}}); !strings.Contains(got, "about 30 seconds") {
		t.Fatalf("FinalMessage = %q", got)
	}
}
