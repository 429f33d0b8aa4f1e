package degrade_test

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// loadSecrets reads testdata/secrets.txt: seeded secrets and injection
// strings, one per line, that must never appear in model-visible output.
func loadSecrets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seeds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			seeds = append(seeds, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return seeds
}

func TestSecretsCorpus(t *testing.T) {
	seeds := loadSecrets(t)
	if len(seeds) < 50 {
		t.Fatalf("corpus has %d seeds, want at least 50", len(seeds))
	}
	var bidi, tag bool
	for _, s := range seeds {
		bidi = bidi || strings.ContainsRune(s, '\u202e')
		tag = tag || strings.ContainsRune(s, '\U000E0041')
	}
	if !bidi || !tag {
		t.Errorf("corpus lacks U+202E (%t) or U+E0041 (%t)", bidi, tag)
	}
}

// modelVisible returns every string this package produces for the given
// configured names: payloads for every reason and variant (as JSON),
// annotations, and messages.
func modelVisible(t *testing.T, dep, tool string, alts []string) []string {
	b := degrade.NewBuilder(dep, tool, 2, degrade.Extras{Alternatives: alts})
	var out []string
	for _, r := range degrade.Reasons() {
		for turn := range 3 {
			data, err := json.Marshal(b.Build(r, time.Duration(turn)*17*time.Second, turn, nil))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(data))
		}
	}
	return append(out,
		degrade.Annotate("Searches the web.", 27*time.Second),
		degrade.FinalMessage([]degrade.Unavailable{{Dependency: dep, RetryAfter: time.Minute}}),
		degrade.ModelUnavailableMessage(30*time.Second),
		degrade.CapabilityNotice([]string{dep}),
	)
}

// TestNoSeedInOutput builds everything model-visible for random valid
// configured names and checks that no seed appears in it. Nothing upstream
// can reach this package's output, so this guards regressions: it fails if
// someone adds error text.
func TestNoSeedInOutput(t *testing.T) {
	seeds := loadSecrets(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_-"
	name := func() string {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200 {
		for _, out := range modelVisible(t, name(), name(), []string{name(), name()}) {
			for _, s := range seeds {
				if strings.Contains(out, s) {
					t.Fatalf("seed %q appears in %q", s, out)
				}
			}
		}
	}
}

// TestNoSeedFragmentInFixedText checks, for typical names, that no 8-byte
// window of any seed appears in the output, so the package's fixed wording
// cannot trip the stricter check (any 8-byte substring of a seed) that other
// packages apply to model-visible output.
func TestNoSeedFragmentInFixedText(t *testing.T) {
	seeds := loadSecrets(t)
	for _, n := range []struct{ dep, tool string }{
		{"search-api", "web_search"},
		{"weather", "get_weather"},
		{"mcp:github", "create_issue"},
	} {
		for _, out := range modelVisible(t, n.dep, n.tool, []string{"cached_search"}) {
			for _, s := range seeds {
				for i := 0; i+8 <= len(s); i++ {
					if w := s[i : i+8]; strings.Contains(out, w) {
						t.Errorf("%q (from seed %q) appears in %q", w, s, out)
					}
				}
			}
		}
	}
}
