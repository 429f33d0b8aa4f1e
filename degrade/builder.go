package degrade

import (
	"encoding/json"
	"slices"
	"time"
)

const (
	// DefaultLimit is the short-circuit count at which guidance becomes
	// terminal when NewBuilder is given a limit of 0 or less.
	DefaultLimit = 2
	// MaxAlternatives bounds the number of alternatives in a payload.
	MaxAlternatives = 5
	// maxCount bounds ThisTurn and Limit. It is far above any real count and
	// exactly representable as a float64, so a payload survives a JSON round
	// trip unchanged.
	maxCount = 1_000_000_000
	// maxBoxedTurn is the largest ThisTurn value a Builder keeps pre-boxed.
	maxBoxedTurn = 64
	// baseKeys is the number of keys every payload has.
	baseKeys = 8
)

// Builder builds the unavailable payloads of one tool whose dependency is
// short-circuited. Everything that does not vary per call (sanitised names,
// guidance, boxed values) is prepared by NewBuilder, so that Build costs one
// map.
//
// A Builder is immutable and safe for concurrent use. The zero Builder is not
// usable: create one with NewBuilder.
type Builder struct {
	depName, toolName string
	dep, tool         any // depName and toolName, boxed
	limit             int

	// guidance[reason index][advisory or terminal], boxed strings.
	guidance [numReasons][2]any
	// turns[n] is float64(n), boxed; limitBox is float64(limit), boxed.
	turns    [maxBoxedTurn + 1]any
	limitBox any
	// alternatives are sanitised and trimmed so that a payload with them,
	// and without last_good, always fits in MaxPayloadBytes; altBoxes are
	// the same strings, boxed.
	alternatives []string
	altBoxes     []any
}

// NewBuilder returns a Builder for tool, which depends on dependency.
//
// dependency and tool are configured names, never upstream text; both go
// through SafeName. limit is the short-circuit count in one invocation at
// which the guidance becomes terminal ("do not call again in this turn"); if
// limit is 0 or less, DefaultLimit is used, and it is capped at 1e9.
//
// NewBuilder renders the guidance for every Reason from the embedded
// templates, so it costs some microseconds: make one Builder per tool and
// keep it.
//
// extras.Alternatives are sanitised with SafeName's rules; empty names,
// duplicates and the tool itself are dropped, at most MaxAlternatives are
// kept, and the list is cut further if it could push a payload over
// MaxPayloadBytes.
func NewBuilder(dependency, tool string, limit int, extras Extras) *Builder {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, maxCount)
	b := &Builder{
		depName:  SafeName(dependency),
		toolName: SafeName(tool),
		limit:    limit,
	}
	b.dep, b.tool = b.depName, b.toolName
	for ri := range numReasons {
		adv, term := renderGuidance(ri, b.toolName, b.depName)
		b.guidance[ri] = [2]any{adv, term}
	}
	for n := range b.turns {
		b.turns[n] = float64(n)
	}
	b.limitBox = float64(limit)
	b.alternatives = b.fitAlternatives(extras.Alternatives)
	for _, a := range b.alternatives {
		b.altBoxes = append(b.altBoxes, a)
	}
	return b
}

// Dependency returns the sanitised dependency name.
func (b *Builder) Dependency() string { return b.depName }

// Tool returns the sanitised tool name.
func (b *Builder) Tool() string { return b.toolName }

// Limit returns the short-circuit count at which guidance becomes terminal.
func (b *Builder) Limit() int { return b.limit }

// Build returns a new payload map for one short-circuited call.
//
// reason is why the dependency is unavailable; a Reason that is not Valid is
// reported as ReasonCircuitOpen. retryAfter is the breaker's own estimate of
// when the dependency may be tried again; it is reported through
// RetryAfterSeconds. thisTurn is the number of short-circuits of this
// dependency in the current invocation, including this one; it is clamped to
// [0, 1e9], and when it reaches the Builder's limit the guidance becomes
// terminal. lastGood, if not nil, is a cached earlier result to include; its
// Result map is not copied, and it is left out if the payload would
// otherwise exceed MaxPayloadBytes or cannot be encoded as JSON.
//
// The map has the eight keys KeyStatus, KeySchema, KeyDependency, KeyTool,
// KeyReason, KeyRetry, KeyShortCircuits and KeyGuidance, plus
// KeyAlternatives if the Builder has alternatives and KeyLastGood if
// lastGood is included. Its JSON encoding is at most MaxPayloadBytes.
//
// Every value is JSON-shaped, exactly as encoding/json decodes the payload
// into a map[string]any: strings, bool, float64 numbers, map[string]any
// objects (retry, short_circuits, last_good) and []any lists
// (alternatives). A callback can read a payload the same way whether it
// came from Build or from a session store after a JSON round trip:
//
//	retry, _ := m[KeyRetry].(map[string]any)
//	secs, _ := retry["after_seconds"].(float64)
//
// Every nested map and list is new and belongs to the caller; lastGood's
// Result map is not copied.
//
// Without alternatives or lastGood, Build makes the three maps' six
// allocations (a map of at most eight entries is a header and one group) as
// long as thisTurn is at most 64; numbers and strings are pre-boxed.
func (b *Builder) Build(reason Reason, retryAfter time.Duration, thisTurn int, lastGood *LastGood) map[string]any {
	ri, ok := reasonIndex(reason)
	if !ok {
		ri = 0 // ReasonCircuitOpen
	}
	thisTurn = min(max(thisTurn, 0), maxCount)
	variant := advisory
	if thisTurn >= b.limit {
		variant = terminal
	}

	extras := len(b.alternatives) > 0 || lastGood != nil
	var m map[string]any
	if !extras {
		// Eight entries fit the single group of a small map: two allocations.
		m = make(map[string]any, baseKeys)
	} else {
		m = make(map[string]any, baseKeys+2)
	}
	m[KeyStatus] = StatusUnavailable
	m[KeySchema] = Schema
	m[KeyDependency] = b.dep
	m[KeyTool] = b.tool
	m[KeyReason] = boxedReasons[ri]
	if allReasons[ri] == ReasonIsolated {
		// Isolated until an operator resets it: no retry time would be true.
		m[KeyRetry] = map[string]any{keyAdvised: false}
	} else {
		m[KeyRetry] = map[string]any{keyAdvised: false, keyAfterSeconds: boxedSeconds(RetryAfterSeconds(retryAfter))}
	}
	var turn any
	if thisTurn <= maxBoxedTurn {
		turn = b.turns[thisTurn]
	} else {
		turn = float64(thisTurn)
	}
	m[KeyShortCircuits] = map[string]any{keyThisTurn: turn, keyLimit: b.limitBox}
	m[KeyGuidance] = b.guidance[ri][variant]
	if extras {
		b.addExtras(m, lastGood)
	}
	return m
}

// addExtras adds the optional keys to a payload that already has its base
// keys. Alternatives always fit (NewBuilder made sure of it); last_good is
// measured, and dropped if it does not fit or cannot be encoded.
func (b *Builder) addExtras(m map[string]any, lastGood *LastGood) {
	if len(b.altBoxes) > 0 {
		m[KeyAlternatives] = slices.Clone(b.altBoxes)
	}
	if lastGood == nil || lastGood.Result == nil {
		return
	}
	m[KeyLastGood] = map[string]any{keyResult: lastGood.Result, keyAgeSeconds: float64(min(max(lastGood.AgeSeconds, 0), maxCount))}
	if data, err := json.Marshal(m); err != nil || len(data) > MaxPayloadBytes {
		delete(m, KeyLastGood)
	}
}

// fitAlternatives sanitises alts and keeps as many as fit in the worst-case
// payload of b: the longest guidance and reason, the largest retry and
// counts.
func (b *Builder) fitAlternatives(alts []string) []string {
	var out []string
	for _, a := range alts {
		if len(out) == MaxAlternatives {
			break
		}
		a = cleanName(a)
		if a == "" || a == b.toolName || slices.Contains(out, a) {
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil
	}
	worst := b.worstCase()
	for ; len(out) > 0; out = out[:len(out)-1] {
		worst[KeyAlternatives] = out
		if data, err := json.Marshal(worst); err == nil && len(data) <= MaxPayloadBytes {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	return slices.Clip(out)
}

// worstCase returns a payload of b whose every base field is at least as
// long, encoded, as in any payload Build can return.
func (b *Builder) worstCase() map[string]any {
	var reason, guidance string
	for ri := range numReasons {
		if r := string(allReasons[ri]); len(r) > len(reason) {
			reason = r
		}
		for _, g := range b.guidance[ri] {
			if g := g.(string); len(g) > len(guidance) {
				guidance = g
			}
		}
	}
	return map[string]any{
		KeyStatus:        StatusUnavailable,
		KeySchema:        Schema,
		KeyDependency:    b.depName,
		KeyTool:          b.toolName,
		KeyReason:        reason,
		KeyRetry:         map[string]any{keyAdvised: false, keyAfterSeconds: float64(MaxRetryAfterSeconds)},
		KeyShortCircuits: map[string]any{keyThisTurn: float64(maxCount), keyLimit: float64(maxCount)},
		KeyGuidance:      guidance,
	}
}
