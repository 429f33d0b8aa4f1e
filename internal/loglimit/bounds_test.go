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

// TestFullTableKeepsWhatIsOwed: a full table drops the windows that are
// over and owe nothing first, so a key's pending "suppressed" count
// survives many other keys passing through.
func TestFullTableKeepsWhatIsOwed(t *testing.T) {
	l := New(time.Minute, 1)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l.Allow("flappy", now)
	l.Allow("flappy", now) // suppressed: owed with flappy's next line
	l.Allow("flappy", now)
	for i := range 2 * MaxKeys { // one-off keys, each window over a minute later
		l.Allow(strconv.Itoa(i), now.Add(time.Duration(i)*time.Minute))
	}
	if ok, s := l.Allow("flappy", now.Add(time.Duration(2*MaxKeys)*time.Minute)); !ok || s != 2 {
		t.Fatalf("flappy's next line: ok=%v suppressed=%d, want true 2", ok, s)
	}
}
