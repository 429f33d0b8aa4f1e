package breaker_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
)

// TestDependencyNameIsNeverAnAddressInOptions: the Go options refuse the
// same names as the configuration file — a URL, host:port, IP address or a
// credential — all listed at once, a credential never repeated.
func TestDependencyNameIsNeverAnAddressInOptions(t *testing.T) {
	_, err := breaker.New(
		breaker.WithDependency("https://svc:hunter2@billing.example/v1", "a"),
		breaker.WithDependency("billing.example.com:443", "b"),
		breaker.WithDependency("10.0.0.7", "c"),
		breaker.WithDependencyOptions("fe80::1", callbacks.Dependency{}),
		breaker.WithDependency("billing-api", "d"),
		breaker.WithTurnLimit(-1),
	)
	if err == nil {
		t.Fatal("New accepted addresses as dependency names")
	}
	msg := err.Error()
	for _, want := range []string{"mappings[0].dependency", "mappings[1].dependency", "mappings[2].dependency", "is an IP address", "turn_limit"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "hunter2") || strings.Contains(msg, "mappings[3]") {
		t.Errorf("error repeats the credential or refuses billing-api:\n%s", msg)
	}
}
