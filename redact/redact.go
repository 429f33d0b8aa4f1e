package redact

import (
	"encoding/base64"
	"math"
	"net/netip"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted replaces a secret, a credential-bearing or internal URL, or a
// private address in the output of Text.
const Redacted = "[redacted]"

// Removed replaces an instruction phrase in the output of Text.
const Removed = "[removed]"

// Printable returns s normalised, at most limit bytes long:
//
//   - invisible characters are dropped: invalid UTF-8 and U+FFFD, control
//     characters other than white space, format characters (zero-width
//     space, joiners, word joiner, soft hyphen, bidi controls, BOM), other
//     default-ignorable code points (variation selectors, Hangul fillers,
//     combining grapheme joiner), tag characters, private-use code points,
//     surrogates and noncharacters;
//   - every Unicode space is a space: tabs, line breaks, U+2028 and U+2029,
//     no-break spaces (U+00A0, U+202F), U+2000–U+200A, U+205F, the
//     ideographic space U+3000 and the other Zs characters; each run of them
//     becomes one ASCII space, and the ends are trimmed;
//   - full-width ASCII (U+FF01–U+FF5E) becomes ASCII.
//
// The result is valid UTF-8, cut on a rune boundary. A limit of 0 or less
// gives "". Printable is idempotent. It redacts nothing: use Text for what a
// model reads.
func Printable(s string, limit int) string {
	out, _ := normalise(s, limit)
	return out
}

// Text returns untrusted text made safe for a model to read, at most limit
// bytes long. It normalises s as Printable does, so that no invisible
// character or unusual space can hide a pattern, and then
//
//   - replaces with "[redacted]": PEM and OpenPGP private keys (to their
//     END line, or to the end of the text); URLs with credentials and
//     every http, https, ws, wss and ftp URL; user:password@host;
//     bearer, basic, token and negotiate credentials (not a lower-case name
//     that starts with the word, such as token-service); JSON web tokens;
//     Google API keys (AIza…) and OAuth tokens (ya29.…); AWS access key IDs
//     and secret access keys; GitHub, Slack, Stripe, OpenAI and Anthropic
//     style keys; Shopify (shpat_…), DigitalOcean (dop_v1_…), Mailgun
//     (key-…), GitLab (glpat-…, gldt-…), Hugging Face (hf_…), npm, PyPI,
//     SendGrid and Google OAuth client secret (GOCSPX-…) tokens; Discord
//     bot tokens; key=value, key: value, "key": "value", 'key': 'value'
//     (Python's repr) and \"key\": \"value\" pairs whose key names a secret
//     (password, secret, token, api_key, auth, credential, cookie,
//     session…), a quoted value to its closing quote; long random-looking
//     tokens (32 or more
//     characters mixing upper case, lower case and digits, or
//     hexadecimal); loopback, private, link-local, shared (100.64/10) and
//     unspecified IPv4 and IPv6 addresses, including IPv4-mapped IPv6 and
//     zoned addresses;
//   - replaces with "[removed]" instruction phrases aimed at the model
//     ("ignore previous instructions", "you are now", "system prompt",
//     "developer mode", role tags such as </system>…), whatever spaces
//     separate their words.
//
// A label and its value read as prose are kept: "Password: must be at
// least 8 characters.", "Auth: none required.", "Bearer tokens are
// accepted", "the next page token followed by…". A label followed by a colon
// and a space (an authorization scheme followed by a space) is prose when
// its value is a plain word — letters in a word's case, or a number of up
// to five digits, not a token that mixes letters and digits — and a
// sentence goes on after it. A value after "=" or in quotes, a value that
// ends the text, a token such as hunter2xyz, and the scheme in an
// Authorization header are always redacted.
//
// Escapes cannot hide a pattern either: Text also matches the text with
// percent-encoding (%3A), backslash escapes behind any number of
// backslashes (\u0041, \\u0041 in JSON embedded in a JSON string, \x41,
// \", \/) and HTML character references (&quot;, &#65;) decoded, and
// escapes of escapes decoded again until none is left, to any depth and in
// any mix of the three (%253A, &amp;amp;amp;#61;, %26#37;3A), in time
// linear in the text's length. When that finds something more to redact,
// the output is the decoded text, redacted; otherwise the text keeps its
// escapes.
//
// When s is longer than Text examines (four times limit, or limit + 48 KiB
// for large limits), the cut-off last
// word is dropped before matching, so that a secret cut in half cannot slip
// through. A limit of 0 or less gives "".
//
// Text is a filter, not a proof: a secret it does not recognise (a bare
// password, a short random string) goes through. Keep secrets out of errors
// in the first place.
func Text(s string, limit int) string { return text(s, limit, true) }

// text is Text; prefilter false applies every pattern (the tests' reference).
func text(s string, limit int, prefilter bool) string {
	if limit <= 0 {
		return ""
	}
	scan := limit
	if limit <= math.MaxInt-maxExtraScan {
		scan += min(3*min(limit, maxExtraScan), maxExtraScan)
	}
	s, cut := normalise(s, scan)
	if cut {
		// The last word may be half a secret: drop it.
		if i := strings.LastIndexByte(s, ' '); i >= 0 {
			s = s[:i]
		} else {
			s = ""
		}
	}
	s = apply(s, prefilter)
	if d, ok := decoded(s); ok {
		// Escapes hid something: the decoded text, redacted, is what is
		// safe to show. Otherwise the text stays as it was written.
		if r := apply(d, prefilter); r != d {
			s = r
		}
	}
	s, _ = normalise(s, limit) // replacements may leave spaces to fold
	return s
}

// apply applies every rule to s, normalised text; prefilter false ignores
// the prefilters.
func apply(s string, prefilter bool) string {
	for _, r := range rules {
		if prefilter && r.need != nil && !r.need(s) {
			continue
		}
		switch {
		case r.at != nil:
			s = replaceAt(s, r.re, r.at)
		case r.fn != nil:
			s = r.re.ReplaceAllStringFunc(s, r.fn)
		default:
			s = r.re.ReplaceAllLiteralString(s, r.with)
		}
	}
	return s
}

// replaceAt replaces each match s[lo:hi] of re with at(s, lo, hi).
func replaceAt(s string, re *regexp.Regexp, at func(s string, lo, hi int) string) string {
	ms := re.FindAllStringIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	copied := 0
	for _, m := range ms {
		b.WriteString(s[copied:m[0]])
		b.WriteString(at(s, m[0], m[1]))
		copied = m[1]
	}
	b.WriteString(s[copied:])
	return b.String()
}

// decoded returns s, normalised text, with its escapes decoded (decode) and
// normalised again; ok is false when s has no escape to decode.
func decoded(s string) (string, bool) {
	if !strings.ContainsAny(s, `\%&`) {
		return s, false
	}
	d := decode(s)
	if d == s {
		return s, false
	}
	d, _ = normalise(d, len(d))
	return d, true
}

// Sensitive reports whether s holds something Text redacts as a credential:
// a key, token, password, private key, or user info in a URL — after the
// same normalisation and decoding, so invisible characters and escapes
// cannot hide one. Plain URLs,
// addresses and instruction phrases do not count. Configuration uses it to
// refuse a name or a setting that carries a secret, without echoing it.
func Sensitive(s string) bool {
	s, _ = normalise(s, len(s))
	if sensitive(s) {
		return true
	}
	d, ok := decoded(s)
	return ok && sensitive(d)
}

// sensitive is Sensitive without decoding: s is normalised text.
func sensitive(s string) bool {
	for _, r := range rules {
		if !r.secret || r.need != nil && !r.need(s) {
			continue
		}
		if r.at != nil {
			for _, m := range r.re.FindAllStringIndex(s, -1) {
				if r.at(s, m[0], m[1]) != s[m[0]:m[1]] {
					return true
				}
			}
			continue
		}
		if r.fn == nil {
			if r.re.MatchString(s) {
				return true
			}
			continue
		}
		for _, m := range r.re.FindAllString(s, -1) {
			if r.fn(m) != m {
				return true
			}
		}
	}
	return false
}

// maxExtraScan bounds how far beyond limit Text reads, which bounds its
// time (a few milliseconds per 10 KiB).
const maxExtraScan = 48 << 10

// normalise is Printable; cut reports whether s was longer than limit after
// normalising, so that some of it was left out.
func normalise(s string, limit int) (out string, cut bool) {
	if limit <= 0 {
		return "", s != ""
	}
	if len(s) <= limit && isPlain(s) {
		return s, false
	}
	var b strings.Builder
	b.Grow(min(len(s), limit))
	space := false // a space is pending, written before the next kept rune
	for _, r := range s {
		switch {
		case isSpace(r):
			space = b.Len() > 0
			continue
		case invisible(r):
			continue
		case r >= 0xff01 && r <= 0xff5e: // full-width ASCII
			r -= 0xfee0
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if b.Len()+n > limit {
			return b.String(), true
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String(), false
}

// isPlain reports whether s is already normalised and printable ASCII: the
// allocation-free fast path.
func isPlain(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || (c == ' ' && s[i+1] == ' ') {
			return false
		}
	}
	return true
}

// isSpace reports whether r separates words: Unicode white space (which
// includes tabs, line breaks, U+0085, U+00A0, U+1680, U+2000–U+200A,
// U+2028, U+2029, U+202F, U+205F and U+3000) and the blank U+2800.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r == 0x2800
}

// invisible reports whether Printable drops r.
func invisible(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1 (white space is handled before)
		return true
	case r < 0x7f:
		return false
	case r == utf8.RuneError:
		return true
	case r >= 0xe0000 && r <= 0xe0fff: // tags and the rest of the ignorable plane-14 block
		return true
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe: // noncharacters
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// rule is one redaction: re's matches become with, or fn(match) if fn is
// set, or at(s, lo, hi) for the match s[lo:hi] if at is set (a rule that
// reads the text around its match). secret marks the rules Sensitive
// applies.
type rule struct {
	secret bool
	re     *regexp.Regexp
	with   string
	fn     func(string) string
	at     func(s string, lo, hi int) string
	// need, if set, reports false only when re cannot match s: a cheap
	// literal test that lets most text skip most patterns (Go's regexp
	// costs microseconds per pattern even on text it cannot match).
	// FuzzPrefilter holds every need to that promise.
	need func(s string) bool
}

// secretKey names a value that is a secret in key=value and "key": value
// pairs; the key may have a prefix and suffix (aws_secret_access_key,
// DB_PASSWORD, X-Api-Key).
const secretKey = `(?:api[_-]?key|apikey|secret|passw(?:or)?d|pwd|token|auth|credential|cookie|session[_-]?id|signature|private[_-]?key)`

// rules are applied in order to normalised text (single ASCII spaces, no
// invisible characters). Patterns that start with a distinctive prefix do
// not require a word boundary before it, so that text glued in front (with
// an invisible separator dropped) does not hide them.
var rules = []rule{
	// PEM and OpenPGP (… PRIVATE KEY BLOCK-----) private keys, to their end
	// or to the end of the text.
	{secret: true, re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)`), with: Redacted,
		need: has("PRIVATE KEY")},
	// URLs: with credentials (any scheme), then every web URL.
	{secret: true, re: regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^ /@]+@\S*`), with: Redacted,
		need: func(s string) bool { return strings.Contains(s, "://") && strings.Contains(s, "@") }},
	{re: regexp.MustCompile(`(?i)(?:https?|wss?|ftp)://\S+`), with: Redacted, need: has("://")},
	{secret: true, re: regexp.MustCompile(`[^ /@:"'<>()\[\]]+:[^ /@]+@(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|[A-Za-z0-9.-]+:[0-9]+)`), with: Redacted,
		need: func(s string) bool { return strings.Contains(s, "@") && strings.Contains(s, ":") }},
	// Authorization schemes, with or without a space after them.
	{secret: true, re: regexp.MustCompile(`(?i)(?:bearer|\bbasic|\btoken|\bnegotiate)[ :=]*[A-Za-z0-9._~+/=-]{6,}`), at: authCredential,
		need: hasWordFold("bearer", "basic", "token", "negotiate")},
	// Well-known token shapes.
	{secret: true, re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]*)?`), with: Redacted, need: has("eyJ")},
	{secret: true, re: regexp.MustCompile(`AIza[0-9A-Za-z_-]{20,}`), with: Redacted, need: has("AIza")},
	{secret: true, re: regexp.MustCompile(`ya29\.[0-9A-Za-z_-]{10,}`), with: Redacted, need: has("ya29.")},
	{secret: true, re: regexp.MustCompile(`(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{12,}`), with: Redacted},
	{secret: true, re: regexp.MustCompile(`(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{10,}`), with: Redacted, need: has("_")},
	{secret: true, re: regexp.MustCompile(`xox[abeprs]-[A-Za-z0-9-]{8,}`), with: Redacted, need: has("xox")},
	{secret: true, re: regexp.MustCompile(`(?:sk|pk|rk)[-_](?:live|test|proj|ant)[-_][A-Za-z0-9_-]{8,}|\bsk-[A-Za-z0-9_-]{20,}`), with: Redacted,
		need: func(s string) bool { return strings.Contains(s, "k-") || strings.Contains(s, "k_") }},
	// Shopify, DigitalOcean, Mailgun, GitLab, Hugging Face, npm, PyPI,
	// SendGrid and Google OAuth client secrets: a fixed prefix.
	{secret: true, re: regexp.MustCompile(`shp(?:at|ca|pa|ss)_[0-9A-Za-z]{32,}|do[opr]_v1_[0-9A-Za-z]{32,}|key-[0-9A-Za-z]{32,}|` +
		gitLabPrefix + `-[0-9A-Za-z_.-]{20,}|(?:hf|api_org)_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|pypi-AgE[A-Za-z0-9_-]{40,}|` +
		`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|GOCSPX-[A-Za-z0-9_-]{20,}`), with: Redacted, need: vendorPrefix},
	// Discord bot tokens: the base64 of the bot's numeric ID, a dot, six or
	// seven characters of time stamp, a dot and an HMAC.
	{secret: true, re: regexp.MustCompile(`[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}`), fn: discordToken, need: dottedRun},
	// key=value, key: value, "key": "value", 'key': 'value' (Python's repr),
	// \"key\": \"value\" (JSON inside a JSON string); a quoted value to its
	// closing quote.
	{secret: true, re: regexp.MustCompile(`(?i)[a-z0-9_.-]*` + secretKey + `[a-z0-9_.-]*(?:\\*["'])? ?[=:] ?(?:\\*"(?:[^"\\]|\\[^"])*(?:\\*")?|'[^']*'?|[^ "&,;]+)`), at: keyValue,
		need: func(s string) bool {
			return strings.ContainsAny(s, "=:") && secretKeyWords(s)
		}},
	// Long random-looking tokens (AWS secret access keys among them).
	{secret: true, re: regexp.MustCompile(`[A-Za-z0-9+/=_-]{32,}`), fn: randomToken, need: tokenRun},
	// Addresses: candidates, then parsed; only non-public ones are redacted.
	{re: regexp.MustCompile(`(?i)\[?(?:[0-9a-f]{0,4}:){2,7}(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9a-f]{1,4})?(?:%[0-9a-z._-]+)?\]?`), fn: internalAddr,
		need: func(s string) bool { return strings.Count(s, ":") >= 2 }},
	{re: regexp.MustCompile(`\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}\b`), fn: internalAddr, need: dottedDigits},
	// Instructions aimed at the model.
	{need: hasWordFold("ignore", "disregard", "forget", "override", "bypass"), re: regexp.MustCompile(`(?i)(?:ignore|disregard|forget|override|bypass)[ ,]*(?:(?:all|any|the|your|of|these|those|my|every|previous|prior|above|earlier|preceding|former|system|developer|original|safety)[ ,]*)*(?:instructions?|directions?|prompts?|rules|guidelines|guardrails)`), with: Removed},
	{need: func(s string) bool {
		return strings.Contains(s, "<") || hasWordFold("prompt", "now", "instruction", "mode", "jailbreak", "override")(s)
	}, re: regexp.MustCompile(`(?i)system ?prompt|you ?are ?now|new ?instructions?|developer ?mode|jailbreak|system ?override|</? ?(?:system|assistant|user|developer|tool_call|tool|instructions?)\b[^>]{0,40}>`), with: Removed},
}

// gitLabPrefix matches the prefixes of GitLab's tokens (personal, deploy,
// project and group, runner, CI/CD job, OAuth application, feed, incoming
// mail, SCIM, agent, feature flag client, workspace).
const gitLabPrefix = `gl(?:pat|dt|ptt|rt|cbt|oas|ft|imt|soat|agent|ffct|wt)`

// discordToken redacts m, three dotted parts, if its first part — or, when
// other text is glued in front, a suffix of it — is the base64 of a
// snowflake ID (17 to 20 digits), as in every Discord bot token.
func discordToken(m string) string {
	id, _, _ := strings.Cut(m, ".")
	for k := 0; len(id)-k >= 23; k++ {
		b, err := base64.RawURLEncoding.DecodeString(id[k:])
		if err != nil || len(b) < 17 || len(b) > 20 {
			continue
		}
		digits := true
		for _, c := range b {
			digits = digits && '0' <= c && c <= '9'
		}
		if digits {
			return m[:k] + Redacted
		}
	}
	return m
}

// authCredential redacts s[lo:hi], an authorization scheme and what
// follows it, unless it reads as prose:
//
//   - nothing separates the two and what follows reads as the rest of a
//     lower-case name (token-service, tokenizer-api, token_limit): a
//     credential glued to its scheme (an invisible separator dropped) holds
//     a digit or an upper-case letter, or is long;
//   - a space separates them, what follows is a plain word and a sentence
//     goes on after it (prose: "Bearer tokens are accepted", "the next page
//     token followed by"), and the scheme is not the value of an
//     Authorization header.
func authCredential(s string, lo, hi int) string {
	m := s[lo:hi]
	rest := ""
	for _, scheme := range [...]string{"bearer", "basic", "token", "negotiate"} {
		if len(m) > len(scheme) && strings.EqualFold(m[:len(scheme)], scheme) {
			rest = m[len(scheme):]
			break
		}
	}
	if rest == "" || len(rest) >= 20 && !strings.ContainsAny(rest[:1], " :=") {
		return Redacted // (no scheme found: one spelt with a look-alike, such as the Kelvin sign for k)
	}
	if sep := rest[:len(rest)-len(strings.TrimLeft(rest, " :="))]; sep != "" {
		if strings.HasSuffix(sep, " ") && !strings.Contains(sep, "=") &&
			!authorizationHeader(s[:lo]) && prose(rest[len(sep):], s[hi:]) {
			return m
		}
		return Redacted
	}
	for j := 0; j < len(rest); j++ {
		if c := rest[j]; !(c >= 'a' && c <= 'z' || c == '-' || c == '.' || c == '_') {
			return Redacted
		}
	}
	return m
}

// authorizationHeader reports whether before, the text in front of an
// authorization scheme, ends with an Authorization (or
// Proxy-Authorization) header's name: the scheme is then that header's
// value, and what follows it a credential.
func authorizationHeader(before string) bool {
	before = strings.TrimRight(before, " ")
	before = strings.TrimRight(before, ":=")
	before = strings.TrimRight(before, " \\\"'")
	const name = "authorization"
	return len(before) >= len(name) && strings.EqualFold(before[len(before)-len(name):], name)
}

// keyValue redacts s[lo:hi], a key that names a secret and its value,
// unless it reads as prose: the key is a label followed by a colon and a
// space (not "=", not quoted JSON), the value is a plain word rather than
// a credential-like token, and a sentence goes on after it. So
// "Password: must be at least 8 characters." and "Auth: none required."
// are kept, while "password: hunter2xyz", "password=secret",
// "Password: s3cret was rejected" and {"password": "a b c"} are redacted.
func keyValue(s string, lo, hi int) string {
	m := s[lo:hi]
	i := strings.IndexAny(m, "=:")
	if i < 0 || m[i] != ':' || i+1 >= len(m) || m[i+1] != ' ' {
		return Redacted
	}
	if key := m[:i]; strings.ContainsAny(key, `"'\`) {
		return Redacted // a quoted key: data, not a label
	}
	if v := m[i+2:]; !strings.ContainsAny(v[:1], `"'\`) && prose(v, s[hi:]) {
		return m
	}
	return Redacted
}

// prose reports whether v, the value after a label, and rest, the text
// after it, read as a sentence rather than as a credential: v is a plain
// word (wordy) and the text goes on with another word ("none required"),
// not with key=value or, after a comma, another label ("x, user: bob"), or
// it ends the sentence ("none.").
func prose(v, rest string) bool {
	// Punctuation at the end of v belongs to the sentence, a parenthesis
	// in front of it to the word.
	trimmed := strings.TrimRight(v, ".,;:!?)")
	punct := v[len(trimmed):]
	v = strings.TrimLeft(trimmed, "(")
	if !wordy(v) {
		return false
	}
	more := strings.TrimLeft(rest, ".,;:!?)")
	punct += rest[:len(rest)-len(more)]
	if more == "" {
		return strings.ContainsAny(punct, ".!?")
	}
	if more[0] != ' ' {
		return false
	}
	next := more[1:]
	if j := strings.IndexByte(next, ' '); j >= 0 {
		next = next[:j]
	}
	if next == "" || strings.Contains(next, "=") || strings.ContainsAny(punct, ",;") && strings.HasSuffix(next, ":") {
		return false // key=value, or a list of labelled values
	}
	c := next[0]
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '('
}

// wordy reports whether v is a plain word, not a credential: up to 40
// bytes of parts separated by - _ ' . or /, each of them letters in one of
// a word's cases (lower, Capitalised, UPPER up to 10 letters, or
// camelCase), and at most one of them a number of up to 5 digits. A part
// that mixes letters and digits (hunter2, s3cret) or holds any other
// character, or two numbers (FAKE-0000-1111), make it a credential.
func wordy(v string) bool {
	if v == "" || len(v) > 40 {
		return false
	}
	numbers := 0
	for part := range strings.FieldsFuncSeq(v, func(r rune) bool { return strings.ContainsRune("-_'./", r) }) {
		if !wordPart(part) {
			return false
		}
		if c := part[0]; '0' <= c && c <= '9' {
			if numbers++; numbers > 1 {
				return false
			}
		}
	}
	return strings.Trim(v, "-_'./") != ""
}

// wordPart reports whether p is letters in a word's case, or a short number.
func wordPart(p string) bool {
	var lower, upper, digit int
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z':
			lower++
		case 'A' <= c && c <= 'Z':
			upper++
		case '0' <= c && c <= '9':
			digit++
		default:
			return false
		}
	}
	switch {
	case digit > 0:
		return lower+upper == 0 && digit <= 5
	case upper == 0, upper == len(p) && upper <= 10:
		return true
	}
	// Capitalised or camelCase: no two upper-case letters in a row, and
	// none last.
	for i := 1; i < len(p); i++ {
		if isUpper(p[i]) && (isUpper(p[i-1]) || i == len(p)-1) {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// randomToken redacts t if it looks random: it mixes upper case, lower case
// and digits, or it is hexadecimal with both letters and digits.
func randomToken(t string) string {
	var upper, lower, digit, hexOnly = false, false, false, true
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
			hexOnly = hexOnly && c <= 'F'
		case c >= 'a' && c <= 'z':
			lower = true
			hexOnly = hexOnly && c <= 'f'
		case c >= '0' && c <= '9':
			digit = true
		default:
			hexOnly = false
		}
	}
	if (upper && lower && digit) || (hexOnly && digit && (upper || lower)) {
		return Redacted
	}
	return t
}

// internalAddr redacts a if it parses as an address that is not public:
// loopback, private, link-local, shared address space (100.64.0.0/10),
// unspecified, or any IPv4-mapped IPv6 address.
func internalAddr(a string) string {
	ip, err := netip.ParseAddr(strings.Trim(a, "[]"))
	if err != nil {
		return a
	}
	if ip.Is4In6() {
		return Redacted
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() || sharedSpace.Contains(ip) || siteLocal.Contains(ip) {
		return Redacted
	}
	return a
}

var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10") // deprecated, still internal
)

// Prefilters (rule.need). Each reports false only when its pattern cannot
// match. Case-insensitive words are looked for in ASCII text only: Go's
// (?i) also folds the Kelvin sign (U+212A) to k and the long s (U+017F) to
// s, so text with any non-ASCII byte always goes to the pattern.

// has reports whether s contains lit.
func has(lit string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, lit) }
}

// hasWordFold reports whether s contains one of words (lower-case ASCII),
// in any case; text that is not all ASCII always does.
func hasWordFold(words ...string) func(string) bool {
	return func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return true
			}
		}
		lower := strings.ToLower(s) // ASCII: no copy unless s has upper case
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
}

// secretKeyWords is the prefilter of secretKey: every alternative contains
// one of these.
var secretKeyWords = hasWordFold("api", "secret", "passw", "pwd", "token", "auth", "credential", "cookie", "session", "signature", "private")

// tokenRun reports whether s has a run of 32 characters a random token is
// made of.
func tokenRun(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-' {
			if n++; n >= 32 {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// vendorPrefix is the prefilter of the vendor token rule: s holds one of
// its prefixes ("gl" only when a dash follows within six letters, so that
// prose such as "global" skips the pattern).
func vendorPrefix(s string) bool {
	for _, p := range [...]string{"shp", "_v1_", "key-", "hf_", "api_org_", "npm_", "pypi-", "SG.", "GOCSPX-"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "gl")
		if j < 0 {
			return false
		}
		i += j + 2
		for k := i; k < len(s) && k <= i+6; k++ {
			if s[k] == '-' {
				return true
			}
			if s[k] < 'a' || s[k] > 'z' {
				break
			}
		}
	}
}

// dottedRun is the prefilter of Discord tokens: s has a run of 23
// characters of [A-Za-z0-9_-] followed by a dot.
func dottedRun(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-':
			n++
		case c == '.' && n >= 23:
			return true
		default:
			n = 0
		}
	}
	return false
}

// dottedDigits reports whether s has a digit, a dot and a digit in a row
// (every dotted quad does).
func dottedDigits(s string) bool {
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && '0' <= s[i-1] && s[i-1] <= '9' && '0' <= s[i+1] && s[i+1] <= '9' {
			return true
		}
	}
	return false
}
