package spanredact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLargeJSONIsReadOnlyAsFarAsTheLimit: a JSON attribute of megabytes is
// sanitised from its first kilobytes; the rest is never read. The proof: a
// syntax error far past the limit does not turn the value into text (which
// a whole parse would), and the output is the document's sanitised start.
func TestLargeJSONIsReadOnlyAsFarAsTheLimit(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"contents":[`)
	for i := range 100000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","text":"token=abcdef1234567890 look up acme"}`)
	}
	b.WriteString(`]` + ` this is not JSON`) // a whole parse fails here, 6 MB in
	in := b.String()
	out := r.sanitise(in)
	if !strings.HasPrefix(out, `{"contents":[{"role":"user","text":"[redacted] look up acme"}`) {
		t.Fatalf("out = %.200s…: want the sanitised start of the document", out)
	}
	if len(out) > DefaultLimit || strings.Contains(out, "abcdef1234567890") {
		t.Fatalf("len %d, or a secret kept: %.200s…", len(out), out)
	}
}

// TestSmallJSONStaysValid: a value that fits the limit comes out as valid
// JSON in its own order, credential-named members replaced whole, deep
// values replaced, and a value that is not one JSON document as text.
func TestSmallJSONStaysValid(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"b":1,"a":[true,null,"x"],"password":{"x":1},"pin":"","max_tokens":5,"userPin":4711}`: `{"b":1,"a":[true,null,"x"],"password":"[redacted]","pin":"","max_tokens":5,"userPin":"[redacted]"}`,
		` [ {} , [ ] , 1.50e3 ] `: `[{},[],1.50e3]`,
		`{"":{"":""}}`:            `{"":{"":""}}`,
		`{"a":1} {"b":2}`:         `{"a":1} {"b":2}`, // two values: text
		`{"a":`:                   `{"a":`,           // cut: text
	} {
		if got := r.sanitise(in); got != want {
			t.Errorf("sanitise(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzSanitise: whatever the input, the output is valid UTF-8 within the
// limit, and valid JSON when the input was and the output was not cut.
func FuzzSanitise(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `[1,2,[3,{"password":"x"}]]`, `{"k":"v",}`, `[` + strings.Repeat("[", 40) + `]`, "{\"\u2028\":\"\\u0000\"}",
		`{"body":"{\"config\":\"\\u0041IzaSyFAKE-0123456789abc\"}"}`, `{"a":"[\"{\\\"pin\\\":1}\"]"}`, `["{'password': 'x'}", "%41"]`} {
		f.Add(s)
	}
	r, err := New(WithLimit(256))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := r.sanitise(in)
		if len(out) > 256 || !utf8.ValidString(out) {
			t.Fatalf("sanitise(%q) = %q: over the limit or not UTF-8", in, out)
		}
		tr := strings.TrimSpace(in)
		if json.Valid([]byte(tr)) && len(tr) > 1 && (tr[0] == '{' || tr[0] == '[') && len(out) < 200 && !json.Valid([]byte(out)) {
			t.Fatalf("sanitise(%q) = %q: valid JSON in, invalid out", in, out)
		}
	})
}

// BenchmarkSanitise: a tool call's arguments (small) and a whole LLM
// request of about a megabyte, as ADK records them on spans.
func BenchmarkSanitise(b *testing.B) {
	r, err := New()
	if err != nil {
		b.Fatal(err)
	}
	var big strings.Builder
	big.WriteString(`{"model":"gemini","contents":[`)
	for i := range 12000 {
		if i > 0 {
			big.WriteByte(',')
		}
		big.WriteString(`{"role":"user","parts":[{"text":"look up the invoice of acme"}]}`)
	}
	big.WriteString(`]}`)
	for name, in := range map[string]string{
		"args-60B":    `{"query":"acme","api_key":"AIzaSyA1b2C3","url":"https://x"}`,
		"request-1MB": big.String(),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				r.sanitise(in)
			}
		})
	}
}
