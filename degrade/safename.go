package degrade

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds the length in bytes of a name after SafeName.
const MaxNameBytes = 64

// unknownName replaces a name that is empty after sanitising.
const unknownName = "unknown"

// SafeName returns s made safe to show to a model or a user as the name of a
// dependency, tool or capability. It
//
//   - drops invalid UTF-8, U+FFFD, C0 and C1 control characters, bidi
//     controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
//     zero-width and other format characters (Unicode category Cf, which
//     includes U+200B–U+200D, U+2060 and U+FEFF), tag characters
//     (U+E0000–U+E007F), variation selectors, private-use code points and
//     noncharacters;
//   - drops the characters `"`, `\`, `<`, `>`, `&` and “`”, so that a name
//     cannot carry markup and its JSON encoding is exactly as long as it is;
//   - turns each run of white space (including tabs, newlines and U+2028)
//     into one space and trims the ends;
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
	var b strings.Builder
	b.Grow(min(len(s), MaxNameBytes))
	space := false // a space is pending, written before the next kept rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.IsSpace(r) { // before dropRune: a tab or newline separates words
			space = b.Len() > 0
			continue
		}
		if dropRune(r) {
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

// dropRune reports whether SafeName removes r.
func dropRune(r rune) bool {
	switch {
	case r == utf8.RuneError: // invalid UTF-8, or U+FFFD itself
		return true
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r == '"', r == '\\', r == '<', r == '>', r == '&', r == '`':
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c: // bidi controls
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x180e: // zero width
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tag characters, assigned or not
		return true
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef: // variation selectors
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe: // noncharacters
		return true
	case r < 0x80:
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs)
}
