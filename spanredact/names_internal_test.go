package spanredact

import (
	"strings"
	"testing"
)

// TestJSONRedactionIsNoWeakerThanText: a member name marks its value as a
// credential whole (review finding: auth, signature, private-key and numeric
// PINs or passwords used to pass through the JSON walk), while ordinary
// names that merely contain a short word stay readable.
func TestJSONRedactionIsNoWeakerThanText(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"password": 98765432}`, `{"auth": "hunter2hunter2"}`, `{"signature": "hunter2hunter2"}`,
		`{"private-key": "hunter2hunter2"}`, `{"userPin": 4711}`, `{"x-auth": "hunter2hunter2"}`,
		`{"otp": 123456}`,
	} {
		if s := r.sanitise(in); strings.Contains(s, "hunter2") || strings.Contains(s, "98765432") ||
			strings.Contains(s, "4711") || strings.Contains(s, "123456") {
			t.Errorf("%s → %s: credential kept", in, s)
		}
	}
	for _, in := range []string{`{"author": "Jane Doe"}`, `{"shipping": "express"}`, `{"max_tokens": 100}`, `{"spinner": 3}`} {
		if s := r.sanitise(in); strings.Contains(s, "[redacted]") {
			t.Errorf("%s → %s: an ordinary member was redacted", in, s)
		}
	}
}
