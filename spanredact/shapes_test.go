package spanredact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/adkbreaker/adkbreaker/spanredact"
)

// secretShapes are secrets that used to reach the trace backend: each with
// the part that must not be exported.
var secretShapes = []struct{ name, in, needle string }{
	{"shopify", "x 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", "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d"},
	{"digitalocean", "dop_v1_" + strings.Repeat("1a2b3c4d", 8), strings.Repeat("1a2b3c4d", 8)},
	{"mailgun", "api:key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "3ax6xnjp29jd6fds4gc373sgvjxteol0"},
	{"gitlab", "glpat-xYz1AbC2dEf3GhI4jKl5", "xYz1AbC2dEf3GhI4jKl5"},
	{"hugging face", "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"},
	{"discord", "Bot MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab", "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe"},
	{"python password", "{'password': 'hunter2pass'}", "hunter2pass"},
	{"python api key", "{'user': 'svc', 'api_key': 'abcdefgh12'}", "abcdefgh12"},
	{"url-encoded credentials", "https%3A%2F%2Fadmin%3Ahunter2pass%40db.internal.example%2Fprod", "hunter2pass"},
	{"pgp private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXfakeFAKEfake0123\n-----END PGP PRIVATE KEY BLOCK-----", "lQOYBGXfakeFAKEfake0123"},
	{"key escaped in embedded json", `{"config":"\u0041IzaSyFAKE-0123456789abc"}`, "IzaSyFAKE-0123456789abc"},
}

// TestShapesAreRedactedInTextAndJSON: each shape is redacted in a text
// attribute, in a string of a JSON attribute (which stays JSON), in a
// string slice and in the status description.
func TestShapesAreRedactedInTextAndJSON(t *testing.T) {
	red, err := spanredact.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range secretShapes {
		t.Run(c.name, func(t *testing.T) {
			q, _ := json.Marshal(c.in)
			attrs := map[string]string{
				"text":        "upstream said: " + c.in,
				"json member": `{"note":` + string(q) + `,"n":1}`,
				"json list":   `[` + string(q) + `]`,
				"json nested": `{"a":{"b":[{"c":` + string(q) + `}]}}`,
			}
			for form, v := range attrs {
				got := red.Span(stub(attribute.String(spanredact.KeyToolResponse, v))).Attributes()[0].Value.AsString()
				if strings.Contains(got, c.needle) {
					t.Errorf("%s %q: exported %q", form, v, got)
				}
				if form != "text" && !json.Valid([]byte(got)) {
					t.Errorf("%s %q: exported %q, not JSON", form, v, got)
				}
			}
			s := red.Span(stub(attribute.StringSlice(spanredact.KeyLLMRequest, []string{c.in})))
			if got := strings.Join(s.Attributes()[0].Value.AsStringSlice(), "\n"); strings.Contains(got, c.needle) {
				t.Errorf("string slice: exported %q", got)
			}
		})
	}
}

// TestKeyEscapedTwiceInEmbeddedJSON: a key inside a JSON string that is
// itself inside a JSON string, escaped twice, is redacted both when the
// attribute is read as JSON and when the same text is only text.
func TestKeyEscapedTwiceInEmbeddedJSON(t *testing.T) {
	red, err := spanredact.New()
	if err != nil {
		t.Fatal(err)
	}
	const in = `{"body":"{\"config\":\"\\u0041IzaSyFAKE-0123456789abc\"}"}`
	for _, v := range []string{in, "response: " + in} {
		got := red.Span(stub(attribute.String(spanredact.KeyToolResponse, v))).Attributes()[0].Value.AsString()
		if strings.Contains(got, "IzaSyFAKE") {
			t.Errorf("%s: exported %s", v, got)
		}
	}
}

// TestEmbeddedJSONIsSanitisedAsJSON: a string that holds a JSON document (a
// tool's response passed on as text) is sanitised as JSON: its
// credential-named members are replaced whole, as at the top level, and
// the result is still a string holding JSON.
func TestEmbeddedJSONIsSanitisedAsJSON(t *testing.T) {
	red, err := spanredact.New()
	if err != nil {
		t.Fatal(err)
	}
	in := `{"body":"{\"pin\":\"4711\",\"user\":\"bob\",\"inner\":\"{\\\"passcode\\\":\\\"0000\\\"}\"}","n":2}`
	got := red.Span(stub(attribute.String(spanredact.KeyToolResponse, in))).Attributes()[0].Value.AsString()
	const want = `{"body":"{\"pin\":\"[redacted]\",\"user\":\"bob\",\"inner\":\"{\\\"passcode\\\":\\\"[redacted]\\\"}\"}","n":2}`
	if got != want {
		t.Errorf("exported\n %s\nwant\n %s", got, want)
	}
	// Strings that merely start like JSON stay text.
	for _, v := range []string{`{"note":"[see above]"}`, `{"note":"{not json}"}`, `{"note":"[1, 2"}`} {
		if got := red.Span(stub(attribute.String(spanredact.KeyToolResponse, v))).Attributes()[0].Value.AsString(); got != v {
			t.Errorf("%s: exported %s, want it unchanged", v, got)
		}
	}
}
