package redact

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeSeeds: escapes of every kind, nested to depths the old three-pass
// decoder did not reach, in mixes where each layer uses another scheme.
var decodeSeeds = []string{
	"", "plain", "%41", "%2541", "%25252541", "%%341", "\\u0041", "\\\\u0041", "\\x41", "\\\"", "\\n",
	"&amp;", "&amp;amp;amp;amp;#61;", "&#38;#38;#38;#38;#61;", "%26#37;3D", "&#37;26#37;3D", "%5Cu0041",
	"\\u0025\\u0033D", "&#92;u0041", "&#x5C;&#x5C;u0041", "\\u0026amp;amp;#61;", "&#;", "&#x;", "&x&#61;",
	"\\", "%", "&", "&amp", "\\u00", "%4", "&#1114112;", "&#xD800;", "\\uD800", "a&amp;amp;amp;amp;#58;b",
	"%2526%2523%2536%2531%253B", "\\\\\\\\\\\\\\\"", "&#x26;&#x23;&#x36;&#x31;&#x3B;",
}

// TestDecodeUntilNothingChanges: decode leaves nothing that one more pass
// of the old one-pass decoder would decode, at any depth.
func TestDecodeUntilNothingChanges(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecode(t, s)
	}
	// Nested n deep, n up to what a 4 KiB input holds.
	for _, layer := range []struct {
		name string
		wrap func(string) string // escapes the first byte of s once more
	}{
		{"html", func(s string) string { return "&amp;" + s[1:] }},
		{"percent", func(s string) string { return "%25" + s[1:] }},
		{"alternating", func(s string) string {
			if s[0] == '&' {
				return "%26" + s[1:]
			}
			return "&#37;" + s[1:]
		}},
		{"backslash", func(s string) string {
			if s[0] == '\\' {
				return "%5C" + s[1:]
			}
			return "\\u0025" + s[1:]
		}},
	} {
		s := "&#61;"
		if layer.name == "percent" {
			s = "%3D"
		}
		if layer.name == "backslash" {
			s = "\\u003D"
		}
		for depth := 1; len(s) < 4096; depth++ {
			if got := decode("password" + s + "hunter2xyz"); got != "password=hunter2xyz" {
				t.Fatalf("%s, depth %d: decode(%.80q…) = %.80q, want password=hunter2xyz", layer.name, depth, s, got)
			}
			s = layer.wrap(s)
		}
	}
}

// FuzzDecode: for any text, decode leaves nothing to decode and never
// grows the text.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDecode(t, s)
	})
}

func checkDecode(t *testing.T, s string) {
	t.Helper()
	d := decode(s)
	if len(d) > len(s) {
		t.Fatalf("decode(%q) = %q: longer than its input", s, d)
	}
	if again := decodeOnce(d); again != d {
		t.Fatalf("decode(%q) = %q: one more pass still decodes it to %q", s, d, again)
	}
	if !strings.ContainsAny(s, `\%&`) && d != s {
		t.Fatalf("decode(%q) = %q: changed text without escapes", s, d)
	}
}

// decodeOnce is one pass of the old decoder, which decode used to repeat
// three times: the reference that decode leaves nothing for. It returns s
// itself when s has nothing to decode.
func decodeOnce(s string) string {
	var b strings.Builder
	copied := 0 // s[:copied] is written to b, or decoded
	emit := func(from, to int, decoded string) {
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[copied:from])
		b.WriteString(decoded)
		copied = to
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			j := i + 1
			for j+4 <= len(s) && s[j] == '2' && s[j+1] == '5' && isHex(s[j+2]) && isHex(s[j+3]) {
				j += 2 // %25 is "%": %253A is %3A encoded again
			}
			if j+2 <= len(s) && isHex(s[j]) && isHex(s[j+1]) {
				if c := unhex(s[j])<<4 | unhex(s[j+1]); c < utf8.RuneSelf {
					emit(i, j+2, string(rune(c)))
					i = j + 1
				}
			}
		case '\\':
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if j == len(s) {
				i = j - 1
				break
			}
			switch c := s[j]; c {
			case 'u':
				if j+5 <= len(s) && allHex([]byte(s[j+1:j+5])) {
					r, _ := strconv.ParseUint(s[j+1:j+5], 16, 32)
					if utf8.ValidRune(rune(r)) { // not a surrogate
						emit(i, j+5, string(rune(r)))
						i = j + 4
						continue
					}
				}
			case 'x':
				if j+3 <= len(s) && isHex(s[j+1]) && isHex(s[j+2]) {
					if c := unhex(s[j+1])<<4 | unhex(s[j+2]); c < utf8.RuneSelf {
						emit(i, j+3, string(rune(c)))
						i = j + 2
						continue
					}
				}
			case '"', '\'', '/':
				emit(i, j+1, string(rune(c)))
				i = j
				continue
			case 'n', 'r', 't':
				emit(i, j+1, " ")
				i = j
				continue
			}
			i = j - 1 // the backslashes stay; what follows is read as text
		case '&':
			end := strings.IndexByte(s[i:min(i+12, len(s))], ';')
			if end < 0 {
				break
			}
			if d, ok := entity([]byte(s[i+1 : i+end])); ok {
				emit(i, i+end+1, d)
				i += end
			}
		}
	}
	if copied == 0 {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}
