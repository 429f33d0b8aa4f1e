package config_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// The layered-timeout rule reaches the file: a slow_call the effective
// window cannot count is reported at the dependency's path, with the other
// problems.
func TestLayeredTimeoutRuleInFile(t *testing.T) {
	_, err := config.Parse([]byte(`
version: 1
defaults:
  turn_limit: -1
dependencies:
  billing-api:
    tools: [get_invoice]
    policy: {slow_call: 90s, probe_lease: 2m}
`), config.YAML)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"dependencies.billing-api.policy.window: must exceed slow_call (1m30s), got 1m0s", "defaults.turn_limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
