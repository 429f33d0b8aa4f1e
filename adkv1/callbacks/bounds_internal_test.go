package callbacks

import (
	"math"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/registry"
)

func TestCacheCapSaturates(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, 4 * registry.DefaultMaxBreakers}, {1, 4}, {1024, 4096},
		{math.MaxInt, math.MaxInt}, {math.MaxInt/4 + 1, math.MaxInt},
	} {
		if got := cacheCap(tc.in); got != tc.want {
			t.Errorf("cacheCap(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestConfigSizesBounded(t *testing.T) {
	reg := registry.MustNew()
	_, err := New(Config{Registry: reg, MaxPending: math.MaxInt, MaxInvocations: math.MaxInt,
		Dependencies: map[registry.Key]Dependency{"d": {LastGoodEntries: math.MaxInt}}})
	if err == nil {
		t.Fatal("huge sizes accepted")
	}
	for _, want := range []string{"max_pending", "max_invocations", "last_good_entries"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}
