package degrade

import (
	"strings"
	"unicode/utf8"

	"github.com/adkbreaker/adkbreaker/redact"
)

// MaxNameBytes bounds the length in bytes of a name after SafeName.
const MaxNameBytes = 64

// unknownName replaces a name that is empty after sanitising.
const unknownName = "unknown"

// SafeName returns s made safe to show to a model or a user as the name of a
// dependency, tool or capability. It
//
//   - normalises s with redact.Printable, the sanitiser for everything a
//     model reads: it drops invalid UTF-8, U+FFFD, C0 and C1 control
//     characters, bidi controls, zero-width and other format characters
//     (Unicode category Cf: U+200B–U+200D, U+2060, U+FEFF, soft hyphen),
//     tag characters, variation selectors and other default-ignorable code
//     points, private-use code points and noncharacters, and turns full-width
//     ASCII into ASCII;
//   - drops the characters `"`, `\`, `<`, `>`, `&` and “`”, so that a name
//     cannot carry markup and its JSON encoding is exactly as long as it is;
//   - turns each run of white space (any Unicode space, including tabs,
//     newlines, no-break spaces and U+2028) into one space and trims the
//     ends;
//   - keeps at most MaxNameBytes bytes, cutting on a rune boundary.
//
// A name that is empty after this becomes "unknown". SafeName is idempotent.
func SafeName(s string) string {
	if n := cleanName(s); n != "" {
		return n
	}
	return unknownName
}

// cleanName is SafeName without the "unknown" fallback: it returns "" when
// nothing is left.
func cleanName(s string) string {
	if isCleanASCII(s) {
		return s
	}
	// redact.Printable drops invisible characters and folds every Unicode
	// space into one ASCII space, as for any text a model reads; a name also
	// loses markup characters, and is bounded.
	s = redact.Printable(s, len(s))
	var b strings.Builder
	b.Grow(min(len(s), MaxNameBytes))
	space := false // a space is pending, written before the next kept rune
	for _, r := range s {
		if r == ' ' {
			space = b.Len() > 0
			continue
		}
		if markup(r) {
			continue
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if b.Len()+n > MaxNameBytes {
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isCleanASCII reports whether s already is its own SafeName: non-empty,
// short enough, printable ASCII without the dropped punctuation, and without
// leading, trailing or doubled spaces. It is the allocation-free fast path.
func isCleanASCII(s string) bool {
	if s == "" || len(s) > MaxNameBytes || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return false
		}
		switch c {
		case '"', '\\', '<', '>', '&', '`':
			return false
		case ' ':
			if s[i+1] == ' ' { // s does not end with a space, so i+1 is valid
				return false
			}
		}
	}
	return true
}

// markup reports whether r is one of the characters SafeName drops so that
// a name cannot carry markup and its JSON encoding is as long as it is.
func markup(r rune) bool {
	switch r {
	case '"', '\\', '<', '>', '&', '`':
		return true
	}
	return false
}
