package degrade

import (
	"encoding/json"
	"math"
)

// Info is what Parse reads from a payload.
type Info struct {
	Dependency        string // sanitised dependency name
	Tool              string // sanitised tool name
	Reason            Reason // always Valid
	RetryAfterSeconds int    // in [1, MaxRetryAfterSeconds]; 0 for ReasonIsolated (no retry time)
	ThisTurn          int    // short-circuits this invocation, including this one
	Limit             int    // count at which guidance is terminal, at least 1
	Terminal          bool   // ThisTurn >= Limit: the guidance says stop
}

// Parse reports whether m is a payload made by Builder.Build and, if so,
// returns what it says. It accepts the map Build returns as well as the same
// payload after a JSON round trip (nested objects as map[string]any and
// numbers as float64 or json.Number).
//
// Parse is strict: every base key must be present with the right type,
// status and schema must match exactly, no other keys than the optional
// KeyAlternatives and KeyLastGood may appear, the reason must be Valid,
// retry.advised must be false, the numbers must be whole and in range, and
// the names must be their own SafeName. Anything else, including a payload
// of another schema version, yields false.
func Parse(m map[string]any) (Info, bool) {
	var info Info
	if len(m) < baseKeys || len(m) > baseKeys+2 {
		return info, false
	}
	for k, v := range m {
		switch k {
		case KeyStatus, KeySchema, KeyDependency, KeyTool, KeyReason,
			KeyRetry, KeyShortCircuits, KeyGuidance:
		case KeyAlternatives:
			if !validAlternatives(v) {
				return info, false
			}
		case KeyLastGood:
			if !validLastGood(v) {
				return info, false
			}
		default:
			return info, false
		}
	}
	if s, _ := m[KeyStatus].(string); s != StatusUnavailable {
		return info, false
	}
	if s, _ := m[KeySchema].(string); s != Schema {
		return info, false
	}
	if _, ok := m[KeyGuidance].(string); !ok {
		return info, false
	}
	var ok bool
	if info.Dependency, ok = safeString(m[KeyDependency]); !ok {
		return info, false
	}
	if info.Tool, ok = safeString(m[KeyTool]); !ok {
		return info, false
	}
	r, _ := m[KeyReason].(string)
	if info.Reason = Reason(r); !info.Reason.Valid() {
		return info, false
	}
	if info.RetryAfterSeconds, ok = parseRetry(m[KeyRetry], info.Reason == ReasonIsolated); !ok {
		return info, false
	}
	if info.ThisTurn, info.Limit, ok = parseShortCircuits(m[KeyShortCircuits]); !ok {
		return info, false
	}
	info.Terminal = info.ThisTurn >= info.Limit
	return info, true
}

// safeString returns v if it is a string that SafeName leaves unchanged.
func safeString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok && SafeName(s) == s
}

// parseRetry reads a Retry in typed or decoded-JSON form. An isolated
// dependency's retry has no after_seconds (0); any other needs one.
func parseRetry(v any, isolated bool) (int, bool) {
	var advised any
	var secs any
	switch r := v.(type) {
	case Retry:
		advised, secs = r.Advised, r.AfterSeconds
	case map[string]any:
		if len(r) != 2 && !(isolated && len(r) == 1) {
			return 0, false
		}
		advised, secs = r["advised"], r["after_seconds"]
	default:
		return 0, false
	}
	if a, ok := advised.(bool); !ok || a {
		return 0, false
	}
	if isolated && (secs == nil || secs == 0) {
		return 0, true
	}
	n, ok := toInt(secs)
	if !ok || n < 1 || n > MaxRetryAfterSeconds {
		return 0, false
	}
	return n, true
}

// parseShortCircuits reads a ShortCircuits in typed or decoded-JSON form.
func parseShortCircuits(v any) (thisTurn, limit int, ok bool) {
	var t, l any
	switch s := v.(type) {
	case ShortCircuits:
		t, l = s.ThisTurn, s.Limit
	case map[string]any:
		if len(s) != 2 {
			return 0, 0, false
		}
		t, l = s["this_turn"], s["limit"]
	default:
		return 0, 0, false
	}
	thisTurn, ok1 := toInt(t)
	limit, ok2 := toInt(l)
	if !ok1 || !ok2 || thisTurn < 0 || thisTurn > maxCount || limit < 1 || limit > maxCount {
		return 0, 0, false
	}
	return thisTurn, limit, true
}

// validAlternatives reports whether v is a list of safe names.
func validAlternatives(v any) bool {
	switch a := v.(type) {
	case []string:
		if len(a) > MaxAlternatives {
			return false
		}
		for _, s := range a {
			if cleanName(s) != s || s == "" {
				return false
			}
		}
		return true
	case []any:
		if len(a) > MaxAlternatives {
			return false
		}
		for _, e := range a {
			s, ok := e.(string)
			if !ok || cleanName(s) != s || s == "" {
				return false
			}
		}
		return true
	}
	return false
}

// validLastGood reports whether v has the shape of a LastGood.
func validLastGood(v any) bool {
	switch lg := v.(type) {
	case LastGood:
		return lg.AgeSeconds >= 0
	case map[string]any:
		if len(lg) != 2 {
			return false
		}
		if _, ok := lg["result"].(map[string]any); !ok {
			return false
		}
		n, ok := toInt(lg["age_seconds"])
		return ok && n >= 0
	}
	return false
}

// toInt converts a whole number in any of the forms a payload may hold to an
// int. Values beyond ±2^53 are refused: a float64 cannot hold them exactly.
func toInt(v any) (int, bool) {
	const maxExact = 1 << 53
	switch n := v.(type) {
	case int:
		return n, n >= -maxExact && n <= maxExact
	case int64:
		return int(n), n >= -maxExact && n <= maxExact
	case float64:
		if n != math.Trunc(n) || n < -maxExact || n > maxExact {
			return 0, false
		}
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			f, ferr := n.Float64()
			if ferr != nil {
				return 0, false
			}
			return toInt(f)
		}
		return toInt(i)
	}
	return 0, false
}
