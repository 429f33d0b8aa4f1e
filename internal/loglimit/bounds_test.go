package loglimit

import (
	"strconv"
	"testing"
	"time"
)

// TestTableBounded: the table never holds more than MaxKeys keys.
func TestTableBounded(t *testing.T) {
	l := New(time.Hour, 1)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3*MaxKeys + 7 {
		l.Allow(strconv.Itoa(i), now)
		if len(l.keys) > MaxKeys {
			t.Fatalf("%d keys after %d lines, bound %d", len(l.keys), i+1, MaxKeys)
		}
	}
}
