package degrade_test

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

var baseKeys = []string{
	degrade.KeyDependency, degrade.KeyGuidance, degrade.KeyReason, degrade.KeyRetry,
	degrade.KeySchema, degrade.KeyShortCircuits, degrade.KeyStatus, degrade.KeyTool,
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestBuild(t *testing.T) {
	b := degrade.NewBuilder("search-api", "web_search", 3, degrade.Extras{})
	m := b.Build(degrade.ReasonTimeout, 26500*time.Millisecond, 1, nil)

	if got := sortedKeys(m); !slices.Equal(got, baseKeys) {
		t.Fatalf("keys = %v, want %v", got, baseKeys)
	}
	want := map[string]any{
		degrade.KeyStatus:        degrade.StatusUnavailable,
		degrade.KeySchema:        degrade.Schema,
		degrade.KeyDependency:    "search-api",
		degrade.KeyTool:          "web_search",
		degrade.KeyReason:        "timeout",
		degrade.KeyRetry:         map[string]any{"advised": false, "after_seconds": 27.0},
		degrade.KeyShortCircuits: map[string]any{"this_turn": 1.0, "limit": 3.0},
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	g, ok := m[degrade.KeyGuidance].(string)
	if !ok || !strings.Contains(g, "web_search") || !strings.Contains(g, "search-api") {
		t.Errorf("guidance = %#v, want a string naming the tool and dependency", m[degrade.KeyGuidance])
	}
}

func TestBuildReturnsNewMap(t *testing.T) {
	b := degrade.NewBuilder("dep", "tool", 0, degrade.Extras{Alternatives: []string{"other_tool"}})
	m1 := b.Build(degrade.ReasonCircuitOpen, time.Second, 1, nil)
	m1[degrade.KeyStatus] = "mutated"
	m1[degrade.KeyAlternatives].([]any)[0] = "mutated"
	m1[degrade.KeyRetry].(map[string]any)["after_seconds"] = 999.0
	m1[degrade.KeyShortCircuits].(map[string]any)["limit"] = 999.0
	delete(m1, degrade.KeyTool)
	m2 := b.Build(degrade.ReasonCircuitOpen, time.Second, 1, nil)
	if m2[degrade.KeyStatus] != degrade.StatusUnavailable || m2[degrade.KeyTool] != "tool" {
		t.Errorf("second Build saw the first map's mutation: %v", m2)
	}
	if alts := m2[degrade.KeyAlternatives].([]any); !slices.Equal(alts, []any{"other_tool"}) {
		t.Errorf("alternatives = %q after mutating an earlier payload's copy", alts)
	}
	if info, ok := degrade.Parse(m2); !ok || info.RetryAfterSeconds != 1 || info.Limit != 2 {
		t.Errorf("second Build saw the first payload's nested mutation: %+v %v", info, m2)
	}
}

func TestBuildDefaults(t *testing.T) {
	tests := []struct {
		name              string
		dep, tool         string
		limit             int
		reason            degrade.Reason
		retry             time.Duration
		thisTurn          int
		wantDep, wantTool string
		wantReason        string
		wantRetry         int
		wantSC            degrade.ShortCircuits
	}{
		{"zero limit", "d", "t", 0, degrade.ReasonTimeout, time.Second, 1, "d", "t", "timeout", 1, degrade.ShortCircuits{1, 2}},
		{"negative limit", "d", "t", -5, degrade.ReasonTimeout, time.Second, 1, "d", "t", "timeout", 1, degrade.ShortCircuits{1, 2}},
		{"invalid reason", "d", "t", 2, "no such reason", time.Second, 1, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1, 2}},
		{"empty reason", "d", "t", 2, "", time.Second, 1, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1, 2}},
		{"negative retry", "d", "t", 2, degrade.ReasonCircuitOpen, -time.Minute, 1, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1, 2}},
		{"huge retry", "d", "t", 2, degrade.ReasonCircuitOpen, math.MaxInt64, 1, "d", "t", "circuit_open", 3600, degrade.ShortCircuits{1, 2}},
		{"negative turn", "d", "t", 2, degrade.ReasonCircuitOpen, time.Second, -3, "d", "t", "circuit_open", 1, degrade.ShortCircuits{0, 2}},
		{"turn beyond boxed table", "d", "t", 2, degrade.ReasonCircuitOpen, time.Second, 1000, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1000, 2}},
		{"huge turn clamped", "d", "t", 2, degrade.ReasonCircuitOpen, time.Second, math.MaxInt, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1_000_000_000, 2}},
		{"huge limit clamped", "d", "t", math.MaxInt, degrade.ReasonCircuitOpen, time.Second, 1, "d", "t", "circuit_open", 1, degrade.ShortCircuits{1, 1_000_000_000}},
		{"empty names", "", "\u202e", 2, degrade.ReasonCircuitOpen, time.Second, 1, "unknown", "unknown", "circuit_open", 1, degrade.ShortCircuits{1, 2}},
		{"names sanitised", "a\u202eb", "x\U000E0041y", 2, degrade.ReasonCircuitOpen, time.Second, 1, "ab", "xy", "circuit_open", 1, degrade.ShortCircuits{1, 2}},
		{"isolated: no retry time", "d", "t", 2, degrade.ReasonIsolated, degrade.UntilReset, 1, "d", "t", "isolated", 0, degrade.ShortCircuits{1, 2}},
		{"isolated: a duration is ignored", "d", "t", 2, degrade.ReasonIsolated, 30 * time.Second, 1, "d", "t", "isolated", 0, degrade.ShortCircuits{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := degrade.NewBuilder(tt.dep, tt.tool, tt.limit, degrade.Extras{}).Build(tt.reason, tt.retry, tt.thisTurn, nil)
			if m[degrade.KeyDependency] != tt.wantDep || m[degrade.KeyTool] != tt.wantTool {
				t.Errorf("dependency, tool = %q, %q; want %q, %q", m[degrade.KeyDependency], m[degrade.KeyTool], tt.wantDep, tt.wantTool)
			}
			if m[degrade.KeyReason] != tt.wantReason {
				t.Errorf("reason = %q, want %q", m[degrade.KeyReason], tt.wantReason)
			}
			if r := m[degrade.KeyRetry].(map[string]any); r["advised"] != false || (tt.wantRetry == 0 && len(r) != 1) || (tt.wantRetry > 0 && r["after_seconds"] != float64(tt.wantRetry)) {
				t.Errorf("retry = %+v, want after_seconds %d", r, tt.wantRetry)
			}
			sc := m[degrade.KeyShortCircuits].(map[string]any)
			if sc["this_turn"] != float64(tt.wantSC.ThisTurn) || sc["limit"] != float64(tt.wantSC.Limit) {
				t.Errorf("short_circuits = %+v, want %+v", sc, tt.wantSC)
			}
			if _, ok := degrade.Parse(roundTrip(t, m)); !ok {
				t.Errorf("Parse(round trip) failed: %v", m)
			}
		})
	}
}

func TestBuilderAccessors(t *testing.T) {
	b := degrade.NewBuilder(" search\u202e api ", "web_search", 0, degrade.Extras{})
	if b.Dependency() != "search api" || b.Tool() != "web_search" || b.Limit() != degrade.DefaultLimit {
		t.Errorf("Dependency, Tool, Limit = %q, %q, %d", b.Dependency(), b.Tool(), b.Limit())
	}
}

func TestGuidanceTurnsTerminalAtLimit(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 5} {
		b := degrade.NewBuilder("search-api", "web_search", limit, degrade.Extras{})
		for _, r := range degrade.Reasons() {
			advisory := b.Build(r, time.Second, 0, nil)[degrade.KeyGuidance].(string)
			for turn := 0; turn <= limit+2; turn++ {
				m := b.Build(r, time.Second, turn, nil)
				g := m[degrade.KeyGuidance].(string)
				info, ok := degrade.Parse(m)
				if !ok {
					t.Fatalf("Parse failed for %v", m)
				}
				wantTerminal := turn >= limit
				if info.Terminal != wantTerminal {
					t.Errorf("limit %d, %s, turn %d: Terminal = %t, want %t", limit, r, turn, info.Terminal, wantTerminal)
				}
				firm := strings.HasPrefix(g, "Do not call web_search again in this turn")
				if wantTerminal && !firm {
					t.Errorf("limit %d, %s, turn %d: guidance not terminal: %q", limit, r, turn, g)
				}
				if !wantTerminal && g != advisory {
					t.Errorf("limit %d, %s, turn %d: guidance %q, want the advisory %q", limit, r, turn, g, advisory)
				}
				if wantTerminal && !strings.Contains(g, "say that search-api is temporarily unavailable") {
					t.Errorf("terminal guidance does not tell the model what to say: %q", g)
				}
			}
		}
	}
}

// TestGuidanceRules checks the rules stated in templates/guidance.tmpl for
// every reason and variant, with the longest names.
func TestGuidanceRules(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, degrade.MaxNameBytes) }
	digits := regexp.MustCompile(`[0-9]`)
	names := []struct{ dep, tool string }{
		{"search-api", "web_search"},
		{long("d"), long("t")},
		{strings.Repeat("服", 30), strings.Repeat("é", 40)},
	}
	for _, n := range names {
		b := degrade.NewBuilder(n.dep, n.tool, 2, degrade.Extras{})
		dep, tool := b.Dependency(), b.Tool()
		seen := map[string]degrade.Reason{}
		for _, r := range degrade.Reasons() {
			for _, turn := range []int{1, 2} {
				g := b.Build(r, time.Second, turn, nil)[degrade.KeyGuidance].(string)
				if len(g) > degrade.MaxGuidanceBytes {
					t.Errorf("%s turn %d: guidance is %d bytes, over %d: %q", r, turn, len(g), degrade.MaxGuidanceBytes, g)
				}
				if !strings.HasSuffix(g, ".") {
					t.Errorf("%s turn %d: guidance was cut: %q", r, turn, g)
				}
				if strings.Count(g, tool) != 1 || strings.Count(g, dep) != 1 {
					t.Errorf("%s turn %d: guidance must name the tool and the dependency once each: %q", r, turn, g)
				}
				rest := strings.ReplaceAll(strings.ReplaceAll(g, tool, ""), dep, "")
				if digits.MatchString(rest) {
					t.Errorf("%s turn %d: guidance contains a number: %q", r, turn, g)
				}
				if strings.ContainsAny(rest, "\"\\<>&`") || firstUnsafe(g) != -1 {
					t.Errorf("%s turn %d: guidance contains a character that needs escaping: %q", r, turn, g)
				}
				if !strings.Contains(g, "without it") {
					t.Errorf("%s turn %d: guidance does not say to go on without the tool: %q", r, turn, g)
				}
				if prev, dup := seen[g]; dup && turn == 1 {
					t.Errorf("%s and %s share advisory guidance %q", prev, r, g)
				}
				seen[g] = r
			}
		}
	}
}

func TestGuidanceFamiliesDiffer(t *testing.T) {
	b := degrade.NewBuilder("dep", "tool", 2, degrade.Extras{})
	g := func(r degrade.Reason) string { return b.Build(r, time.Second, 1, nil)[degrade.KeyGuidance].(string) }
	for _, r := range []degrade.Reason{degrade.ReasonCircuitOpen, degrade.ReasonIsolated, degrade.ReasonHalfOpenBusy} {
		if !strings.Contains(g(r), "tool is unavailable") || !strings.Contains(g(r), "Retrying now will not help") {
			t.Errorf("%s: not the open-family wording: %q", r, g(r))
		}
	}
	for _, r := range []degrade.Reason{degrade.ReasonTimeout, degrade.ReasonRateLimited, degrade.ReasonServerError,
		degrade.ReasonConnectFailed, degrade.ReasonMalformedResponse} {
		if !strings.Contains(g(r), "tool is failing") || !strings.Contains(g(r), "even with other arguments") {
			t.Errorf("%s: not the failure-family wording: %q", r, g(r))
		}
	}
	if !strings.Contains(g(degrade.ReasonBudgetExhausted), "rest of this turn") {
		t.Errorf("budget_exhausted: %q", g(degrade.ReasonBudgetExhausted))
	}
}

func TestBuildAlternatives(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"empty entries only", []string{"", "\u202e", "  "}, nil},
		{"kept in order", []string{"b_tool", "a_tool"}, []string{"b_tool", "a_tool"}},
		{"sanitised and deduplicated", []string{"a\u202e_tool", "a_tool", " a_tool "}, []string{"a_tool"}},
		{"tool itself dropped", []string{"web_search", "cache"}, []string{"cache"}},
		{"at most five", []string{"a", "b", "c", "d", "e", "f", "g"}, []string{"a", "b", "c", "d", "e"}},
		{"long names cut", []string{strings.Repeat("x", 100)}, []string{strings.Repeat("x", 64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := degrade.NewBuilder("dep", "web_search", 2, degrade.Extras{Alternatives: tt.in}).
				Build(degrade.ReasonCircuitOpen, time.Second, 1, nil)
			var got []string
			list, has := m[degrade.KeyAlternatives].([]any)
			for _, a := range list {
				got = append(got, a.(string))
			}
			if has != (tt.want != nil) || !slices.Equal(got, tt.want) {
				t.Errorf("alternatives = %q (present %t), want %q", got, has, tt.want)
			}
			if _, ok := degrade.Parse(roundTrip(t, m)); !ok {
				t.Errorf("Parse failed: %v", m)
			}
		})
	}
}

func TestBuildLastGood(t *testing.T) {
	b := degrade.NewBuilder("weather-api", "get_weather", 2, degrade.Extras{})
	small := &degrade.LastGood{Result: map[string]any{"temp_c": 21.5, "sky": "clear"}, AgeSeconds: 120}
	m := b.Build(degrade.ReasonTimeout, time.Second, 1, small)
	lg, ok := m[degrade.KeyLastGood].(map[string]any)
	if res, _ := lg["result"].(map[string]any); !ok || lg["age_seconds"] != 120.0 || res["sky"] != "clear" {
		t.Fatalf("last_good = %#v", m[degrade.KeyLastGood])
	}
	if _, ok := degrade.Parse(roundTrip(t, m)); !ok {
		t.Errorf("Parse failed: %v", m)
	}

	neg := b.Build(degrade.ReasonTimeout, time.Second, 1, &degrade.LastGood{Result: map[string]any{}, AgeSeconds: -4})
	if lg := neg[degrade.KeyLastGood].(map[string]any); lg["age_seconds"] != 0.0 {
		t.Errorf("negative age: age_seconds = %v, want 0", lg["age_seconds"])
	}

	for name, lg := range map[string]*degrade.LastGood{
		"too large":    {Result: map[string]any{"blob": strings.Repeat("x", degrade.MaxPayloadBytes)}},
		"fits alone":   {Result: map[string]any{"blob": strings.Repeat("x", 700)}},
		"not encoding": {Result: map[string]any{"f": math.NaN()}},
		"nil result":   {},
	} {
		m := b.Build(degrade.ReasonTimeout, time.Second, 1, lg)
		if _, has := m[degrade.KeyLastGood]; has {
			t.Errorf("%s: last_good kept", name)
		}
		if got := sortedKeys(m); !slices.Equal(got, baseKeys) {
			t.Errorf("%s: keys = %v", name, got)
		}
	}
}

// TestBuildSizeBound builds the largest payloads possible and checks each
// encodes within MaxPayloadBytes, dropping last_good before alternatives.
func TestBuildSizeBound(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 100) }
	alts := []string{long("a"), long("b"), long("c"), long("d"), long("e")}
	b := degrade.NewBuilder(long("d"), long("t"), math.MaxInt, degrade.Extras{Alternatives: alts})
	for _, r := range degrade.Reasons() {
		for _, turn := range []int{0, 1, math.MaxInt} {
			for _, lg := range []*degrade.LastGood{
				nil,
				{Result: map[string]any{"k": "v"}, AgeSeconds: 1},
				{Result: map[string]any{"k": long("v")}, AgeSeconds: math.MaxInt},
			} {
				m := b.Build(r, math.MaxInt64, turn, lg)
				data, err := json.Marshal(m)
				if err != nil || len(data) > degrade.MaxPayloadBytes {
					t.Fatalf("%s turn %d: %d bytes, err %v: %s", r, turn, len(data), err, data)
				}
				if _, hasLG := m[degrade.KeyLastGood]; hasLG {
					if _, hasAlts := m[degrade.KeyAlternatives]; !hasAlts {
						t.Errorf("alternatives dropped while last_good kept")
					}
				}
			}
		}
	}
	// Even beside the longest base fields, five 64-byte alternatives fit:
	// only last_good ever has to give way.
	alt := b.Build(degrade.ReasonCircuitOpen, time.Second, 1, nil)[degrade.KeyAlternatives].([]any)
	if len(alt) != degrade.MaxAlternatives {
		t.Errorf("kept %d alternatives, want %d", len(alt), degrade.MaxAlternatives)
	}
}

func TestBuildAllocs(t *testing.T) {
	b := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{})
	for _, turn := range []int{0, 1, 2, 64} {
		for _, r := range degrade.Reasons() {
			allocs := testing.AllocsPerRun(100, func() {
				_ = b.Build(r, 27*time.Second, turn, nil)
			})
			// Three maps (the payload, retry, short_circuits), each a header
			// and one group; every value is pre-boxed.
			if allocs > 6 {
				t.Errorf("Build(%s, turn %d): %v allocs, want at most 6", r, turn, allocs)
			}
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	bl := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = bl.Build(degrade.ReasonCircuitOpen, 27*time.Second, i&3, nil)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = bl.Build(degrade.ReasonTimeout, 27*time.Second, 1, nil)
			}
		})
	})
	alt := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{Alternatives: []string{"cached_search", "ask_user"}})
	b.Run("alternatives", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = alt.Build(degrade.ReasonCircuitOpen, 27*time.Second, 1, nil)
		}
	})
	lg := &degrade.LastGood{Result: map[string]any{"hits": []any{"a", "b"}}, AgeSeconds: 30}
	b.Run("last_good", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = bl.Build(degrade.ReasonCircuitOpen, 27*time.Second, 1, lg)
		}
	})
}

func BenchmarkNewBuilder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{})
	}
}

// TestBuildIsJSONShaped: a payload holds exactly what encoding/json gives
// when it decodes the payload into a map[string]any, so a callback can read
// it as a user would read decoded JSON, in process or after a session
// store's round trip.
func TestBuildIsJSONShaped(t *testing.T) {
	b := degrade.NewBuilder("search-api", "web_search", 2, degrade.Extras{Alternatives: []string{"cached_search"}})
	for _, lg := range []*degrade.LastGood{nil, {Result: map[string]any{"hits": []any{"a"}, "n": 2.0}, AgeSeconds: 30}} {
		m := b.Build(degrade.ReasonRateLimited, 27*time.Second, 2, lg)
		if rt := roundTrip(t, m); !reflect.DeepEqual(m, rt) {
			t.Errorf("payload is not JSON-shaped:\n got %#v\nwant %#v", m, rt)
		}
		// Read it the way a user's after-tool callback would.
		retry, ok1 := m["retry"].(map[string]any)
		secs, ok2 := retry["after_seconds"].(float64)
		sc, ok3 := m["short_circuits"].(map[string]any)
		turn, ok4 := sc["this_turn"].(float64)
		alts, ok5 := m["alternatives"].([]any)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || secs != 27 || turn != 2 || alts[0] != "cached_search" {
			t.Errorf("reading the payload as JSON-shaped values failed: %#v", m)
		}
		if lg != nil {
			last, ok := m["last_good"].(map[string]any)
			if age, _ := last["age_seconds"].(float64); !ok || age != 30 {
				t.Errorf("last_good = %#v", m["last_good"])
			}
		}
	}
}
