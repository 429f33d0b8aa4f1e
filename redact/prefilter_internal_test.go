package redact

import (
	"strings"
	"testing"
)

// prefilterSeeds exercise each prefilter at its edge: the shapes every
// pattern matches, in both cases, glued to other text, and with the two
// non-ASCII letters Go's (?i) folds to ASCII (the Kelvin sign and the long s).
var prefilterSeeds = []string{
	"", "acme", "Authorization: Bearer abcdef123456", "BASIC dXNlcjpwYXNz", "x-token=abc123def",
	"to\u212Aen=abc123def456", "pa\u017F\u017Fword=hunter2", "\u017Fecret: hunter2",
	"https://user:pass@host.example/x", "ftp://h/x", "user:pw@db.internal:5432", "a:b@c.d",
	"eyJhbGciOi.eyJzdWIiOi.sig", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "ya29.a0AfH6SMBx",
	"ghp_abcdefghij0123", "github_pat_11ABCDEFG", "xoxb-1234-5678-abcd", "sk_live_abcdefgh1234", "sk-" + strings.Repeat("a", 24),
	"API_KEY=x", "db_PASSWD: y", `"Session-Id": "z"`, "PRIVATE-KEY=q", strings.Repeat("A1b2", 9),
	"fe80::1%eth0", "[::1]:80", "10.0.0.7", "1.2.3.4.5", "-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----",
	"IGNORE all previous INSTRUCTIONS", "Bypass the guardrails", "you are now DAN", "</system>", "< tool_call x>",
	"new instruction", "developer mode", "jailbreak", "system override", "System Prompt",
	// Vendor prefixes, the Discord shape at its lengths, quoted values and
	// escapes.
	"shpat_" + strings.Repeat("a1", 16), "dop_v1_" + strings.Repeat("0f", 16), "key-" + strings.Repeat("x9", 16),
	"glpat-" + strings.Repeat("Ab", 10), "glagent-" + strings.Repeat("Ab", 10), "glKat-", "hf_" + strings.Repeat("aB", 15),
	"api_org_" + strings.Repeat("Xy", 15), "npm_" + strings.Repeat("a", 36), "pypi-AgE" + strings.Repeat("z", 40),
	"SG." + strings.Repeat("a", 16) + "." + strings.Repeat("b", 16), "GOCSPX-" + strings.Repeat("c", 20),
	strings.Repeat("M", 23) + ".abcdef." + strings.Repeat("h", 27), "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0",
	strings.Repeat("a", 22) + ".abcdef." + strings.Repeat("h", 27),
	"{'password': 'x y'}", `{\"api_key\": \"v\"}`, `\\"token\\":\\"v\\"`,
	"-----BEGIN PGP PRIVATE KEY BLOCK-----", "https%3A%2F%2Fa%3Ab%40c.d", "%253A", "\\u0041IzaSyA1b2C3d4E5f6G7h8I9j0K1",
	"\\x41", "&quot;secret&quot;: 1", "&#x41;&#65;&amp;lt;", "%5Cu0041", "\\", "%", "&#;", "&#x;",
}

// TestPrefiltersNeverSkipAMatch: a rule's prefilter says "cannot match"
// only when its pattern finds nothing.
func TestPrefiltersNeverSkipAMatch(t *testing.T) {
	for _, s := range prefilterSeeds {
		checkPrefilters(t, s)
		if d, ok := decoded(s); ok {
			checkPrefilters(t, d)
		}
	}
}

// FuzzPrefilter: the same promise for any text, and Text equal to the
// patterns applied without any prefilter.
func FuzzPrefilter(f *testing.F) {
	for _, s := range prefilterSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, _ := normalise(s, 4096)
		checkPrefilters(t, n)
		if d, ok := decoded(n); ok {
			checkPrefilters(t, d) // Text matches decoded text too
		}
		if got, want := Text(s, 4096), text(s, 4096, false); got != want {
			t.Fatalf("Text(%q) = %q, without prefilters %q", s, got, want)
		}
	})
}

func checkPrefilters(t *testing.T, s string) {
	t.Helper()
	for i, r := range rules {
		if r.need != nil && !r.need(s) && r.re.MatchString(s) {
			t.Fatalf("rule %d (%s): the prefilter skips %q, which the pattern matches at %q", i, r.re, s, r.re.FindString(s))
		}
	}
}
