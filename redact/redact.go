// Package redact is the one sanitiser for every piece of untrusted text that
// adkbreaker lets a model (or a span, a log line, a metric) read: tool-error
// details from MCP servers, names, and span attributes on export.
//
// It imports only the standard library.
package redact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable keeps at most limit bytes of s, cut on a rune boundary, with
// control, bidi, format and tag characters dropped and newlines and tabs
// turned into spaces.
func Printable(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), limit))
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
			(r >= 0xE0000 && r <= 0xE007F) || unicode.Is(unicode.Co, r) {
			if r == '\n' || r == '\t' {
				r = ' '
			} else {
				continue
			}
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}(\.[A-Za-z0-9_-]*)?`),
	regexp.MustCompile(`\b(sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{8,}`),
	regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{12,}`),
	regexp.MustCompile(`\b(gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}`),
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{8,}`),
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s/@]+@[^\s]*`),
	regexp.MustCompile(`(?i)\b(api[_-]?key|apikey|secret|password|passwd|pwd|token|access[_-]?token|auth)\s*[=:]\s*"?[^\s"&,;]+`),
	regexp.MustCompile(`(?i)https?://[^\s]+`),
	regexp.MustCompile(`\b(10|127|172\.(1[6-9]|2[0-9]|3[01])|192\.168)(\.[0-9]{1,3}){2,3}\b`),
}

var injectionPatterns = regexp.MustCompile(`(?i)(ignore (all )?(previous|prior|above) instructions|system prompt|you are now|disregard .{0,20}instructions)`)

// Text sanitises untrusted text for a model to read: it drops control, bidi
// and tag characters, redacts secret-looking tokens, URLs and private
// addresses, neutralises instruction phrasing, folds white space and bounds
// the result to limit bytes.
func Text(s string, limit int) string {
	s = Printable(s, 4*limit)
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "[redacted]")
	}
	s = injectionPatterns.ReplaceAllString(s, "[removed]")
	s = strings.Join(strings.Fields(s), " ")
	return Printable(s, limit)
}
