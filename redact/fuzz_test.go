package redact_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/adkbreaker/adkbreaker/redact"
)

// separators are put between the fuzzer's text and a secret, and in place
// of the secret's own spaces: every kind of space Text must see through.
var separators = []string{" ", "\u00a0", "\u3000", "\u2003", "\u202f", "\u205f", "\t", "\n", "\u2028", "  ", " \u200b "}

// invisibles are inserted into a secret; Text must drop them before matching.
var invisibles = []string{"", "\u200b", "\u00ad", "\u2060", "\ufeff", "\u200d", "\ufe0f", "\u202e", "\U000E0020"}

// FuzzText checks, for any text around any secret of testdata/secrets.txt
// (with its spaces swapped and invisible characters inserted), that Text's
// output is valid UTF-8, at most limit bytes, and never holds the secret.
func FuzzText(f *testing.F) {
	cases := loadCases(f)
	for i, c := range cases {
		f.Add("upstream error:", c.in, "", uint(i), uint8(i), uint8(i), 256)
	}
	f.Add("", "", "", uint(0), uint8(0), uint8(0), 0)
	f.Add(strings.Repeat("x ", 200), "Bearer abcdefghijklmnop", "", uint(0), uint8(0), uint8(0), 300)
	f.Add("\xff\xfe", "\U000E0041\u202e", "\x00", uint(3), uint8(9), uint8(200), 1)
	f.Fuzz(func(t *testing.T, prefix, raw, suffix string, pick uint, sep, ins uint8, limit int) {
		limit = min(max(limit, -1), 4096)
		got := redact.Text(prefix+raw+suffix, limit)
		if !utf8.ValidString(got) || len(got) > max(limit, 0) {
			t.Fatalf("Text(%q, %d) = %q: invalid UTF-8 or %d bytes", prefix+raw+suffix, limit, got, len(got))
		}
		if limit < 64 {
			return
		}
		c := cases[pick%uint(len(cases))]
		s := separators[int(sep)%len(separators)]
		in := strings.ReplaceAll(c.in, " ", s)
		if inv := invisibles[int(ins)%len(invisibles)]; inv != "" {
			// Insert after the first character, and inside the needle.
			_, n := utf8.DecodeRuneInString(in)
			in = in[:n] + inv + in[n:]
			if i := strings.Index(in, c.needle); i >= 0 && len(c.needle) > 2 {
				j := i + len(c.needle)/2
				for !utf8.RuneStart(in[j]) {
					j++
				}
				in = in[:j] + inv + in[j:]
			}
		}
		if strings.Contains(redact.Printable(prefix, len(prefix)), c.needle) ||
			strings.Contains(redact.Printable(suffix, len(suffix)), c.needle) {
			return // the fuzzer wrote the secret itself
		}
		text := prefix + s + in + s + suffix
		got = redact.Text(text, limit)
		if strings.Contains(got, c.needle) {
			t.Fatalf("Text(%q, %d) = %q: %q got through", text, limit, got, c.needle)
		}
		if !utf8.ValidString(got) || len(got) > limit {
			t.Fatalf("Text(%q, %d) = %q: invalid UTF-8 or %d bytes", text, limit, got, len(got))
		}
	})
}
