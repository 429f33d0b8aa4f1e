package redact

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decode returns s with the escapes that can hide a pattern decoded:
//
//   - percent-encoding of ASCII, once or more (%3A, %253A: ":");
//   - backslash escapes, behind any number of backslashes (a string escaped
//     once, or twice inside JSON embedded in a JSON string): \u0041 and
//     \\u0041 ("A"), \x41, \" \' \/ (the character), \n \r \t (a space);
//   - HTML character references: &#65; &#x41; &quot; &apos; &amp; &lt;
//     &gt; &sol; &colon; &commat; &equals;.
//
// Every escape is longer than what it decodes to, so the result is never
// longer than s. Escapes of escapes (%5Cu0041, &amp;quot;) are decoded too:
// decode makes up to three passes.
func decode(s string) string {
	for range 3 {
		d := decodeOnce(s)
		if d == s {
			break
		}
		s = d
	}
	return s
}

// decodeOnce is one pass of decode. It returns s itself when s has nothing
// to decode.
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
				if j+5 <= len(s) && allHex(s[j+1:j+5]) {
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
			if d, ok := entity(s[i+1 : i+end]); ok {
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

// entity decodes the HTML character reference &name; (name without & and ;).
func entity(name string) (string, bool) {
	switch name {
	case "quot":
		return `"`, true
	case "apos":
		return "'", true
	case "amp":
		return "&", true
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "sol":
		return "/", true
	case "colon":
		return ":", true
	case "commat":
		return "@", true
	case "equals":
		return "=", true
	}
	if len(name) < 2 || name[0] != '#' {
		return "", false
	}
	base, digits := 10, name[1:]
	if digits[0] == 'x' || digits[0] == 'X' {
		base, digits = 16, digits[1:]
	}
	r, err := strconv.ParseUint(digits, base, 32)
	if err != nil || !utf8.ValidRune(rune(r)) {
		return "", false
	}
	return string(rune(r)), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
