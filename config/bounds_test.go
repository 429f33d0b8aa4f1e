package config_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// max_breakers near the integer limit once overflowed the plugin's binding
// cache size and silently turned off the binding cache and last_good.
func TestMaxBreakersRange(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "4611686018427387904", "1048577"} {
		_, err := parse(t, "version: 1\ndefaults:\n  max_breakers: "+v+"\n", config.YAML)
		p := find(t, problems(t, err), "defaults.max_breakers")
		if !strings.Contains(p.Message, "must be in [0, 1048576]") {
			t.Errorf("max_breakers %s: %q", v, p.Message)
		}
	}
	mustParse(t, "version: 1\ndefaults:\n  max_breakers: 1048576\n", config.YAML)
}
