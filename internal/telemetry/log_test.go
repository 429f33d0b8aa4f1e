package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/internal/telemetry"
	"github.com/adkbreaker/adkbreaker/registry"
	"github.com/adkbreaker/adkbreaker/registry/registrytest"
)

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestTransitionLogRateLimit: a flapping dependency logs LogBurst lines per
// LogPeriod; the first line after the period says how many were left out.
// Another dependency has its own allowance.
func TestTransitionLogRateLimit(t *testing.T) {
	clk := registrytest.NewFakeClock(time.Unix(1_700_000_000, 0))
	reg := registry.MustNew(registry.WithClock(clk))
	var buf bytes.Buffer // written only by the delivery goroutine; read after Flush
	stop := telemetry.LogTransitions(reg, slog.New(slog.NewJSONHandler(&buf, nil)))
	defer stop()
	for range 8 { // 16 transitions
		_ = reg.Isolate("flappy")
		reg.Reset("flappy")
	}
	_ = reg.Isolate("steady")
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := records(t, &buf)
	n := map[string]int{}
	for _, r := range recs {
		n[r["dependency"].(string)]++
	}
	if n["flappy"] != telemetry.LogBurst || n["steady"] != 1 {
		t.Fatalf("lines per dependency = %v, want %d flappy and 1 steady", n, telemetry.LogBurst)
	}
	if r := recs[0]; r["level"] != "WARN" || r["msg"] != telemetry.LogOpened || r["cause"] != "isolated" {
		t.Errorf("first line = %v", r)
	}
	if r := recs[1]; r["level"] != "INFO" || r["msg"] != telemetry.LogClosed || r["cause"] != "reset" {
		t.Errorf("second line = %v", r)
	}

	buf.Reset()
	clk.Advance(telemetry.LogPeriod)
	_ = reg.Isolate("flappy")
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs = records(t, &buf)
	if len(recs) != 1 || recs[0]["suppressed"] != float64(16-telemetry.LogBurst) {
		t.Fatalf("after the period: %v, want one line with suppressed=%d", recs, 16-telemetry.LogBurst)
	}
}

// Two plugins sharing a registry and a logger log each transition once;
// after both stop, nothing is logged.
func TestTransitionLogSharedOnce(t *testing.T) {
	reg := registry.MustNew()
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, nil))
	stop1 := telemetry.LogTransitions(reg, l)
	stop2 := telemetry.LogTransitions(reg, l)
	_ = reg.Isolate("a")
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(records(t, &buf)); n != 1 {
		t.Fatalf("%d lines, want 1", n)
	}
	stop1()
	stop1()
	stop2()
	reg.Reset("a")
	if err := reg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(records(t, &buf)); n != 1 {
		t.Fatalf("%d lines after stop, want 1", n)
	}
}
