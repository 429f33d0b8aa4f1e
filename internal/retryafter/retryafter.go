// Package retryafter parses server retry hints: HTTP Retry-After values and
// protobuf-style durations ("7s", {"seconds": 7}).
package retryafter

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max caps a parsed delay: a hint longer than a day is treated as a day.
const Max = 24 * time.Hour

// Parse parses a Retry-After value: delay-seconds or an HTTP date relative to
// now. Invalid, zero or past values give 0; values are capped at Max,
// including delay-seconds too large for any integer type.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if allDigits(v) {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil { // only ErrRange is possible: more seconds than int64 holds
			return Max
		}
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(Max/time.Second))) * time.Second
	}
	if strings.HasPrefix(v, "-") && allDigits(v[1:]) {
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, Max)
		}
	}
	return 0
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Seconds converts a non-negative number of seconds into a duration capped at
// Max. NaN, infinities and values ≤ 0 give 0; values too large for a
// time.Duration give Max instead of overflowing.
func Seconds(s float64) time.Duration {
	if !(s > 0) { // also NaN
		return 0
	}
	if s >= Max.Seconds() {
		return Max
	}
	return time.Duration(s * float64(time.Second))
}

// Duration parses a protobuf JSON duration ("7s", "1.5s", "10000000000s") or
// a Go duration ("1m30s"), capped at Max. Invalid, zero or negative values
// give 0; values too large for a time.Duration give Max.
func Duration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return 0
		}
		return min(d, Max)
	}
	// time.ParseDuration refuses durations beyond ~292 years; a protobuf
	// duration may hold up to 10,000 years.
	if num, ok := strings.CutSuffix(v, "s"); ok {
		// Out of float64's range, f is ±Inf (or 0 for an underflow): a
		// huge value is still a long hint, never an ignored one.
		if f, err := strconv.ParseFloat(num, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return Seconds(f)
		}
	}
	return 0
}
