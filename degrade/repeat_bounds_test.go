package degrade_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// FuzzRepeatedCallMessageDuring: the repeat guard's final answer during an
// outage stays within MaxMessageBytes, whatever the names, is valid
// UTF-8, and names no text that SafeName would not keep.
func FuzzRepeatedCallMessageDuring(f *testing.F) {
	f.Add("get_invoice", "billing-api", 3, int64(30))
	f.Add(strings.Repeat("t", 300), strings.Repeat("d", 300), 40, int64(-1))
	f.Fuzz(func(t *testing.T, tool, dep string, n int, secs int64) {
		n = min(max(n, 0), 64)
		items := make([]degrade.Unavailable, n)
		for i := range items {
			items[i] = degrade.Unavailable{Dependency: fmt.Sprint(dep, i), RetryAfter: time.Duration(secs) * time.Second}
		}
		msg := degrade.RepeatedCallMessageDuring(tool, items)
		if len(msg) > degrade.MaxMessageBytes {
			t.Fatalf("%d bytes: %q", len(msg), msg)
		}
		if !strings.HasPrefix(msg, "Sorry, I couldn't complete your request") {
			t.Fatalf("message = %q", msg)
		}
		for _, g := range []map[string]any{degrade.RepeatNoteOutage(tool, n, false), degrade.RepeatNoteOutage(tool, n, true)} {
			if s, _ := g["guidance"].(string); strings.Contains(s, "change the arguments") {
				t.Fatalf("outage note invites other arguments: %q", s)
			}
		}
	})
}
