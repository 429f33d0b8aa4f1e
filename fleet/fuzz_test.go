package fleet

import (
	"strings"
	"testing"
)

// FuzzParseMessage: any payload from the channel — a decision or an
// outcome message — is parsed or refused, never panics, and what is
// accepted is well formed; an accepted outcome message encodes back to
// itself, so what is counted is exactly what was sent.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		"1|open|1733000000000000|30000|trip|pod-a|billing-api",
		"1|close|1733000000000001|0|probe_succeeded|pod-b|mcp:github",
		"1|isolate|1733000000000002|0|isolated|pod-c|billing-api", "1|reset|1733000000000003|0|reset|pod-a|billing-api",
		"1|isolated|1|0|x|y|z",
		"1|open|1|1|x|y|a|b|c", "2|open|1|1|x|y|z", "1|open|-1|1|x|y|z", "1|open|1|-5|x|y|z", "", "|||||||",
		"2|pod-a|1733000000000000\n3 1 billing-api\n0 7 mcp:github",
		"2|pod-a|1\n0 0 x", "2|pod-a|1\n1 1 x\n1 1 x", "2|pod-a|1\n4294967296 0 x", "2|pod a|1\n1 0 x",
		"2|pod-a|1\n1 0 a key with spaces|and bars", "2|pod-a|0\n1 0 x", "2|pod-a|1", "2|pod-a|1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, ok := parseMessage(s); ok {
			if m.gen == 0 || m.holdMs < 0 || m.origin == "" || m.dep == "" || !knownKind(m.kind) {
				t.Fatalf("accepted %q as %+v", s, m)
			}
			if strings.Contains(m.origin, "|") {
				t.Fatalf("origin %q", m.origin)
			}
		}
		o, ok := parseOutcomes(s)
		if !ok {
			return
		}
		if o.seq == 0 || o.origin == "" || strings.ContainsAny(o.origin, "| \n") || !printable(o.origin) ||
			len(o.entries) == 0 || len(o.entries) > MaxOutcomeKeys {
			t.Fatalf("accepted %q as %+v", s, o)
		}
		seen := map[string]bool{}
		for _, e := range o.entries {
			if e.s+e.f == 0 || e.s >= maxDelta || e.f >= maxDelta || !e.dep.Valid() || seen[string(e.dep)] {
				t.Fatalf("accepted %q with entry %+v", s, e)
			}
			seen[string(e.dep)] = true
		}
		back, ok := parseOutcomes(o.String())
		if !ok || back.String() != o.String() || back.seq != o.seq || len(back.entries) != len(o.entries) {
			t.Fatalf("%q: %+v does not round-trip (%+v)", s, o, back)
		}
		for i := range back.entries {
			if back.entries[i] != o.entries[i] {
				t.Fatalf("%q: entry %d %+v became %+v", s, i, o.entries[i], back.entries[i])
			}
		}
	})
}
