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

func TestParseHugeIsCapped(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, v := range []string{"9223372036854775807", "99999999999999999999999", "18446744073709551616"} {
		if got := retryafter.Parse(v, now); got != retryafter.Max {
			t.Errorf("Parse(%q) = %v, want %v", v, got, retryafter.Max)
		}
	}
	for _, v := range []string{"-99999999999999999999999", "+5", "0"} {
		if got := retryafter.Parse(v, now); got != 0 {
			t.Errorf("Parse(%q) = %v, want 0", v, got)
		}
	}
}

func TestDurationAndSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"7s", 7 * time.Second}, {"1.5s", 1500 * time.Millisecond}, {"0s", 0}, {"-3s", 0},
		{"10000000000s", retryafter.Max}, {"1e10s", retryafter.Max}, {"NaNs", 0}, {"x", 0},
		{"1m30s", 90 * time.Second}, {"Infs", retryafter.Max},
		{"1e400s", retryafter.Max}, {"-1e400s", 0}, {"1e-400s", 0}, // beyond float64: still capped, never ignored
	} {
		if got := retryafter.Duration(tc.in); got != tc.want {
			t.Errorf("Duration(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := retryafter.Seconds(1e10); got != retryafter.Max {
		t.Errorf("Seconds(1e10) = %v, want Max", got)
	}
}
