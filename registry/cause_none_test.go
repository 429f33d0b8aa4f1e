package registry_test

import (
	"testing"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestFreshBreakerCauseIsNone: a breaker that has never moved reports the
// cause "none", not a number.
func TestFreshBreakerCauseIsNone(t *testing.T) {
	reg := registry.MustNew()
	if _, err := reg.Get("dep"); err != nil {
		t.Fatal(err)
	}
	snap := reg.Snapshot()
	if len(snap) != 1 {
		t.Fatalf("snapshot = %+v", snap)
	}
	if got := snap[0].Cause.String(); got != "none" || snap[0].Cause != registry.CauseNone {
		t.Errorf("fresh breaker's cause = %q (%d), want none", got, snap[0].Cause)
	}
}
