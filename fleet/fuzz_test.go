package fleet

import (
	"strings"
	"testing"
)

// FuzzParseMessage: any payload from the channel is parsed or refused,
// never panics, and what is accepted is well formed.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		"1|open|1733000000000000|30000|trip|pod-a|billing-api",
		"1|close|1733000000000001|0|probe_succeeded|pod-b|mcp:github",
		"1|open|1|1|x|y|a|b|c", "2|open|1|1|x|y|z", "1|open|-1|1|x|y|z", "1|open|1|-5|x|y|z", "", "|||||||",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := parseMessage(s)
		if !ok {
			return
		}
		if m.gen == 0 || m.holdMs < 0 || m.origin == "" || m.dep == "" || (m.kind != kindOpen && m.kind != kindClose) {
			t.Fatalf("accepted %q as %+v", s, m)
		}
		if strings.Contains(m.origin, "|") {
			t.Fatalf("origin %q", m.origin)
		}
	})
}
