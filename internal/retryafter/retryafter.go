// Package retryafter parses HTTP Retry-After values.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max caps a parsed delay: a hint longer than a day is treated as a day.
const Max = 24 * time.Hour

// Parse parses a Retry-After value: delay-seconds or an HTTP date relative to
// now. Invalid, zero or past values give 0; values are capped at Max.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(Max/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, Max)
		}
	}
	return 0
}
