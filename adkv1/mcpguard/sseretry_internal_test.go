package mcpguard

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestSSEWatchRetryValues: the SSE retry: field as the go-sdk reads it
// (strconv.ParseInt, milliseconds; unusable values leave the previous one; a
// value ≤ 0 means the go-sdk's own backoff), declined only when it is the
// server's delay, the stream can be resumed, and the delay does not fit in
// what is left of the leg.
func TestSSEWatchRetryValues(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		declined     time.Duration // 0: not declined
	}{
		{"day-long", "id: 1\nretry: 86400000\n\n", 24 * time.Hour},
		{"fits", "id: 1\nretry: 200\n\n", 0},
		{"zero", "id: 1\nretry: 0\n\n", 0},
		{"negative", "id: 1\nretry: -5000\n\n", 0},
		{"not a number", "id: 1\nretry: abc\n\n", 0},
		{"exponent", "id: 1\nretry: 1e6\n\n", 0},
		{"unit", "id: 1\nretry: 500ms\n\n", 0},
		{"invalid keeps the last usable", "id: 1\r\nretry: 7200000\r\n\r\nretry: soon\r\n\r\n", 2 * time.Hour},
		{"negative replaces it", "id: 1\nretry: 7200000\n\nretry: -1\n\n", 0},
		{"no id: nothing to resume", "retry: 86400000\n\n", 0},
		{"a long line is not a field", "id: 1\nretry: 8640000" + strings.Repeat("0", 80) + "\n\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cause error
			h := &hintHolder{legEnd: time.Now().Add(time.Second), decline: func(c error) { cause = c }}
			w := &sseWatch{ReadCloser: io.NopCloser(&oneByteReader{s: tc.stream}), h: h}
			if _, err := io.Copy(io.Discard, w); err != nil {
				t.Fatal(err)
			}
			d, _ := cause.(*retryDeclined)
			switch {
			case tc.declined == 0 && cause != nil:
				t.Errorf("declined (%v), want the go-sdk left to wait", cause)
			case tc.declined != 0 && (d == nil || d.wait != tc.declined):
				t.Errorf("cause = %v, want declined %s", cause, tc.declined)
			}
		})
	}
	// Declining ends the leg's context at once, with the cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &hintHolder{legEnd: time.Now().Add(time.Second), decline: cancel}
	_, _ = io.Copy(io.Discard, &sseWatch{ReadCloser: io.NopCloser(strings.NewReader("id: 9\nretry: 5000\n\n")), h: h})
	if _, ok := context.Cause(ctx).(*retryDeclined); !ok {
		t.Errorf("leg cause = %v, want *retryDeclined", context.Cause(ctx))
	}
}

// oneByteReader returns one byte per Read: fields split across reads.
type oneByteReader struct{ s string }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}
