package redact

import (
	"strings"
	"unicode/utf8"
)

// decode returns s with the escapes that can hide a pattern decoded:
//
//   - percent-encoding of ASCII (%3A: ":");
//   - backslash escapes, behind any number of backslashes (a string escaped
//     once, or twice inside JSON embedded in a JSON string): \u0041 and
//     \\u0041 ("A"), \x41, \" \' \/ (the character), \n \r \t (a space);
//   - HTML character references: &#65; &#x41; &quot; &apos; &amp; &lt;
//     &gt; &sol; &colon; &commat; &equals;.
//
// Escapes of escapes, to any depth and in any mix (%253A, &amp;amp;#61;,
// %26#37;3A, %5Cu0041), are decoded until nothing is left to decode: the
// result holds no escape that decode would decode again. Every escape is
// longer than what it decodes to, so the result is never longer than s and
// the number of decodings is at most len(s); decode runs in time linear in
// len(s), whatever the depth.
//
// It reads s once, left to right, into an output buffer, and after each
// byte it writes looks for an escape that this byte completes at the end
// of the buffer (an escape ends at a fixed character: the last hex digit,
// the escaped character, or ";"). One found is replaced by what it decodes
// to, which is then written the same way, since it may complete an escape
// with what precedes it. Bytes before the end of the buffer never change
// again, so no escape is missed and none is looked at twice.
func decode(s string) string {
	i := firstEscape(s)
	if i < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	out = append(out, s[:i]...)
	for ; i < len(s); i++ {
		out = push(out, s[i])
	}
	return string(out)
}

// firstEscape returns the index of the first byte that can start an escape
// in s, or -1.
func firstEscape(s string) int {
	return strings.IndexAny(s, `\%&`)
}

// push appends c to out and decodes every escape that this completes at the
// end of out, repeatedly.
func push(out []byte, c byte) []byte {
	out = append(out, c)
	for {
		start, decoded, ok := escapeAtEnd(out)
		if !ok {
			return out
		}
		out = out[:start]
		// Write the decoded text byte by byte: its last byte may complete
		// another escape with what precedes it. Only the last byte can: an
		// earlier one is followed by a byte of the same character (a UTF-8
		// continuation byte), which ends no escape.
		out = append(out, decoded[:len(decoded)-1]...)
		out = append(out, decoded[len(decoded)-1])
	}
}

// escapeAtEnd reports whether out ends with a complete escape; start is
// where it begins (for a backslash escape, the first of its backslashes) and
// decoded what it stands for.
func escapeAtEnd(out []byte) (start int, decoded string, ok bool) {
	n := len(out)
	switch c := out[n-1]; {
	case c == ';':
		// &name; with a name of at most 10 bytes, from the last '&'.
		for j := n - 2; j >= max(0, n-12); j-- {
			if out[j] == '&' {
				d, ok := entity(out[j+1 : n-1])
				return j, d, ok
			}
		}
	case isHex(c):
		// %XY
		if n >= 3 && out[n-3] == '%' && isHex(out[n-2]) {
			if v := unhex(out[n-2])<<4 | unhex(c); v < utf8.RuneSelf {
				return n - 3, char(rune(v)), true
			}
		}
		// \xXY
		if n >= 4 && out[n-3] == 'x' && out[n-4] == '\\' && isHex(out[n-2]) {
			if v := unhex(out[n-2])<<4 | unhex(c); v < utf8.RuneSelf {
				return backslashes(out, n-4), char(rune(v)), true
			}
		}
		// \uXXXX
		if n >= 6 && out[n-5] == 'u' && out[n-6] == '\\' && allHex(out[n-4:n]) {
			r := rune(unhex(out[n-4]))<<12 | rune(unhex(out[n-3]))<<8 | rune(unhex(out[n-2]))<<4 | rune(unhex(c))
			if utf8.ValidRune(r) { // not a surrogate
				return backslashes(out, n-6), char(r), true
			}
		}
	case c == '"' || c == '\'' || c == '/':
		if n >= 2 && out[n-2] == '\\' {
			return backslashes(out, n-2), char(rune(c)), true
		}
	case c == 'n' || c == 'r' || c == 't':
		if n >= 2 && out[n-2] == '\\' {
			return backslashes(out, n-2), " ", true
		}
	}
	return 0, "", false
}

// backslashes returns where the run of backslashes that ends at out[i]
// begins: an escape behind any number of backslashes decodes whole.
func backslashes(out []byte, i int) int {
	for i > 0 && out[i-1] == '\\' {
		i--
	}
	return i
}

// entity decodes the HTML character reference &name; (name without & and
// ;), of at most 10 bytes.
func entity(name []byte) (string, bool) {
	switch string(name) {
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
	digits, hex := name[1:], false
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, hex = digits[1:], true
	}
	if len(digits) == 0 {
		return "", false
	}
	var r uint64 // at most 9 digits or 8 hex digits: no overflow
	for _, c := range digits {
		switch {
		case hex && isHex(c):
			r = r<<4 | uint64(unhex(c))
		case '0' <= c && c <= '9':
			r = r*10 + uint64(c-'0')
		default:
			return "", false
		}
	}
	if r > utf8.MaxRune || !utf8.ValidRune(rune(r)) {
		return "", false
	}
	return char(rune(r)), true
}

// char returns r as a string, without allocating for ASCII.
func char(r rune) string {
	if r < utf8.RuneSelf {
		return ascii[r : r+1]
	}
	return string(r)
}

// ascii holds every ASCII character, at its own index.
var ascii = func() string {
	var b [utf8.RuneSelf]byte
	for i := range b {
		b[i] = byte(i)
	}
	return string(b[:])
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func allHex(s []byte) bool {
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
