package retryafter_test

import (
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"  ", 0}, {"0", 0}, {"-5", 0}, {"abc", 0}, {"1.5", 0},
		{"7", 7 * time.Second}, {" 120 ", 2 * time.Minute},
		{"999999999999", retryafter.Max},
		{now.Add(90 * time.Second).Format(http1123), 90 * time.Second},
		{now.Add(-time.Minute).Format(http1123), 0},
		{now.Add(72 * time.Hour).Format(http1123), retryafter.Max},
	} {
		if got := retryafter.Parse(tc.in, now); got != tc.want {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

func FuzzParse(f *testing.F) {
	for _, s := range []string{"7", "Sun, 29 Nov 2026 12:01:00 GMT", "-1", "1e9", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryafter.Parse(v, time.Unix(1_800_000_000, 0)); d < 0 || d > retryafter.Max {
			t.Fatalf("Parse(%q) = %v out of [0, Max]", v, d)
		}
	})
}
