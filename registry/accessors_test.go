package registry_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/registry"
)

func TestDefaultPolicyAndConfigured(t *testing.T) {
	def := registry.Policy{OpenFor: time.Minute}
	r := registry.MustNew(registry.WithDefaultPolicy(def), registry.WithPolicy("billing", def))
	if got := r.DefaultPolicy(); got != def.WithDefaults() {
		t.Fatalf("DefaultPolicy = %+v", got)
	}
	// Configured even when the policy equals the default: the user chose it.
	if !r.Configured("billing") || r.Configured("search") {
		t.Fatal("Configured wrong")
	}
	b, _ := r.Get("search")
	if st, ra := b.State(), b.RetryAfter(); st != registry.StateClosed || ra != 0 {
		t.Fatalf("closed breaker: %v %v", st, ra)
	}
}
