package degrade_test

import (
	"math"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{math.MinInt64, 1},
		{-time.Hour, 1},
		{-1, 1},
		{0, 1},
		{1, 1},
		{time.Millisecond, 1},
		{time.Second - 1, 1},
		{time.Second, 1},
		{time.Second + 1, 2},
		{1500 * time.Millisecond, 2},
		{26*time.Second + 1, 27},
		{27 * time.Second, 27},
		{time.Minute, 60},
		{time.Hour - time.Second, 3599},
		{time.Hour - 1, 3600},
		{time.Hour, 3600},
		{time.Hour + 1, 3600},
		{48 * time.Hour, 3600},
		{math.MaxInt64, 3600},
	}
	for _, tt := range tests {
		if got := degrade.RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}
