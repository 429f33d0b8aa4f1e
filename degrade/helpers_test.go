package degrade_test

import (
	"encoding/json"
	"testing"
	"unicode"
	"unicode/utf8"
)

// roundTrip encodes m as JSON and decodes it back, as a model-facing
// transport would.
func roundTrip(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", data, err)
	}
	return out
}

// unsafeRune reports whether r must never appear in model-visible text:
// controls, bidi controls, zero-width and other format characters, tag
// characters, line and paragraph separators, and the replacement character.
func unsafeRune(r rune) bool {
	switch {
	case r == utf8.RuneError, r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return true
	case r >= 0xe0000 && r <= 0xe007f, r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// firstUnsafe returns the first unsafe rune in s, or -1.
func firstUnsafe(s string) rune {
	if !utf8.ValidString(s) {
		return utf8.RuneError
	}
	for _, r := range s {
		if unsafeRune(r) {
			return r
		}
	}
	return -1
}

// walkStrings calls f for every string in a decoded JSON value, keys
// included.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for k, e := range v {
			f(k)
			walkStrings(e, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}
