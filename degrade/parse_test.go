package degrade_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func TestParseRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		b        *degrade.Builder
		reason   degrade.Reason
		retry    time.Duration
		thisTurn int
		lastGood *degrade.LastGood
		want     degrade.Info
	}{
		{
			name: "advisory", b: degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{}),
			reason: degrade.ReasonCircuitOpen, retry: 27 * time.Second, thisTurn: 1,
			want: degrade.Info{Dependency: "search-api", Tool: "web_search", Reason: degrade.ReasonCircuitOpen, RetryAfterSeconds: 27, ThisTurn: 1, Limit: 2},
		},
		{
			name: "terminal", b: degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{}),
			reason: degrade.ReasonRateLimited, retry: 90 * time.Second, thisTurn: 2,
			want: degrade.Info{Dependency: "search-api", Tool: "web_search", Reason: degrade.ReasonRateLimited, RetryAfterSeconds: 90, ThisTurn: 2, Limit: 2, Terminal: true},
		},
		{
			name: "invalid reason", b: degrade.NewBuilder("d", "t", 1, degrade.Extras{}),
			reason: "bogus", retry: 0, thisTurn: 0,
			want: degrade.Info{Dependency: "d", Tool: "t", Reason: degrade.ReasonCircuitOpen, RetryAfterSeconds: 1, ThisTurn: 0, Limit: 1},
		},
		{
			name: "extras", b: degrade.NewBuilder("weather", "get_weather", 3, degrade.Extras{Alternatives: []string{"get_forecast"}}),
			reason: degrade.ReasonServerError, retry: time.Hour, thisTurn: 70,
			lastGood: &degrade.LastGood{Result: map[string]any{"temp": 20}, AgeSeconds: 5},
			want:     degrade.Info{Dependency: "weather", Tool: "get_weather", Reason: degrade.ReasonServerError, RetryAfterSeconds: 3600, ThisTurn: 70, Limit: 3, Terminal: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.b.Build(tt.reason, tt.retry, tt.thisTurn, tt.lastGood)
			if got, ok := degrade.Parse(m); !ok || got != tt.want {
				t.Errorf("Parse(typed) = %+v, %t; want %+v", got, ok, tt.want)
			}
			if got, ok := degrade.Parse(roundTrip(t, m)); !ok || got != tt.want {
				t.Errorf("Parse(JSON) = %+v, %t; want %+v", got, ok, tt.want)
			}
			data, _ := json.Marshal(m)
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var num map[string]any
			if err := dec.Decode(&num); err != nil {
				t.Fatal(err)
			}
			if got, ok := degrade.Parse(num); !ok || got != tt.want {
				t.Errorf("Parse(JSON with json.Number) = %+v, %t; want %+v", got, ok, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	good := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{}).
		Build(degrade.ReasonTimeout, 27*time.Second, 1, nil)
	if _, ok := degrade.Parse(good); !ok {
		t.Fatal("Parse(good) failed")
	}
	decoded := roundTrip(t, good)
	tests := []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"wrong schema", func(m map[string]any) { m[degrade.KeySchema] = "adkbreaker.unavailable/v2" }},
		{"no schema", func(m map[string]any) { delete(m, degrade.KeySchema) }},
		{"wrong status", func(m map[string]any) { m[degrade.KeyStatus] = "ok" }},
		{"status not a string", func(m map[string]any) { m[degrade.KeyStatus] = 1.0 }},
		{"unknown reason", func(m map[string]any) { m[degrade.KeyReason] = "exploded" }},
		{"reason not a string", func(m map[string]any) { m[degrade.KeyReason] = true }},
		{"extra key", func(m map[string]any) { m["error_details"] = "boom" }},
		{"missing guidance", func(m map[string]any) { delete(m, degrade.KeyGuidance) }},
		{"guidance not a string", func(m map[string]any) { m[degrade.KeyGuidance] = []any{} }},
		{"unsafe dependency", func(m map[string]any) { m[degrade.KeyDependency] = "evil\u202e" }},
		{"empty tool", func(m map[string]any) { m[degrade.KeyTool] = "" }},
		{"tool not a string", func(m map[string]any) { m[degrade.KeyTool] = nil }},
		{"retry advised", func(m map[string]any) {
			m[degrade.KeyRetry] = map[string]any{"advised": true, "after_seconds": 5.0}
		}},
		{"retry zero", func(m map[string]any) {
			m[degrade.KeyRetry] = map[string]any{"advised": false, "after_seconds": 0.0}
		}},
		{"retry too large", func(m map[string]any) {
			m[degrade.KeyRetry] = map[string]any{"advised": false, "after_seconds": 3601.0}
		}},
		{"retry fractional", func(m map[string]any) {
			m[degrade.KeyRetry] = map[string]any{"advised": false, "after_seconds": 1.5}
		}},
		{"retry extra field", func(m map[string]any) {
			m[degrade.KeyRetry] = map[string]any{"advised": false, "after_seconds": 1.0, "x": 1.0}
		}},
		{"retry string", func(m map[string]any) { m[degrade.KeyRetry] = "27" }},
		{"short circuits negative", func(m map[string]any) {
			m[degrade.KeyShortCircuits] = map[string]any{"this_turn": -1.0, "limit": 2.0}
		}},
		{"short circuits zero limit", func(m map[string]any) {
			m[degrade.KeyShortCircuits] = map[string]any{"this_turn": 1.0, "limit": 0.0}
		}},
		{"short circuits huge", func(m map[string]any) {
			m[degrade.KeyShortCircuits] = map[string]any{"this_turn": 1e300, "limit": 2.0}
		}},
		{"short circuits missing field", func(m map[string]any) {
			m[degrade.KeyShortCircuits] = map[string]any{"this_turn": 1.0, "max": 2.0}
		}},
		{"alternatives not strings", func(m map[string]any) { m[degrade.KeyAlternatives] = []any{1.0} }},
		{"alternatives unsafe", func(m map[string]any) { m[degrade.KeyAlternatives] = []any{"a\u2066"} }},
		{"alternatives too many", func(m map[string]any) {
			m[degrade.KeyAlternatives] = []any{"a", "b", "c", "d", "e", "f"}
		}},
		{"last_good wrong shape", func(m map[string]any) { m[degrade.KeyLastGood] = "cached" }},
		{"last_good negative age", func(m map[string]any) {
			m[degrade.KeyLastGood] = map[string]any{"result": map[string]any{}, "age_seconds": -1.0}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := maps.Clone(decoded)
			tt.mutate(m)
			if info, ok := degrade.Parse(m); ok {
				t.Errorf("Parse accepted %v as %+v", m, info)
			}
		})
	}
	for name, m := range map[string]map[string]any{
		"nil":   nil,
		"empty": {},
		"other tool result": {
			"status": "unavailable", "schema": "something/else", "a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6,
		},
	} {
		if _, ok := degrade.Parse(m); ok {
			t.Errorf("Parse(%s) = true", name)
		}
	}
}
