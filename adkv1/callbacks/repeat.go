package callbacks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The repeated-call guard ("doom loop"): within one root turn and loop
// scope (loopScope: a ParallelAgent branch), the N-th call of one tool
// with the same canonical arguments is answered with a note
// (degrade.RepeatNote) instead of running the tool again, and the next one
// ends the run: its call escalates and the following model call is
// answered by BeforeModel with a final answer (TurnEndRepeatedCall).
// Calls are counted where the model lists them, in AfterModel (every call
// of a response, parallel ones included); a call the breaker refuses, or
// whose outcome it counts as a failure, is taken back out of the count
// (it is the breaker's: docs/design.md, "One answer per call"). A call
// that is not the first of its kind in the turn is marked for BeforeTool,
// which answers it once it reaches the limit, unless the breaker refuses
// it (then the breaker's payload answers). The tool path itself pays one
// atomic load while no call is marked.

// DefaultRepeatLimit is the N of the repeated-call guard when
// Config.RepeatLimit is 0.
const DefaultRepeatLimit = 3

// NoRepeatLimit turns the repeated-call guard off: as Config.RepeatLimit
// for every tool, as Dependency.RepeatLimit for a dependency's tools, as a
// value of Config.ToolRepeatLimits for one tool (a polling tool, say). The
// configuration file's -1 (config.NoRepeatLimit).
const NoRepeatLimit = config.NoRepeatLimit

// MaxRepeatLimit is the largest repeat limit (calls are counted in 16 bits).
const MaxRepeatLimit = config.MaxRepeatLimit

// The configuration file's bound is the table's: a count of 16 bits.
var _ = [1]struct{}{}[MaxRepeatLimit-(countMask-1)]

// checkRepeatLimit validates a repeat limit: NoRepeatLimit, 0 (inherit)
// or in [2, MaxRepeatLimit] (a limit of 1 would refuse every first call).
func checkRepeatLimit(n int) error {
	if n == NoRepeatLimit || n == 0 || n >= 2 && n <= MaxRepeatLimit {
		return nil
	}
	return fmt.Errorf("must be %d (off), 0 (inherit) or in [2, %d], got %d", NoRepeatLimit, MaxRepeatLimit, n)
}

// repeatLimitOf resolves the repeat limit of a tool: its own, its
// dependency's, the handler's; 0 when the guard is off for it.
func repeatLimitOf(def int, tools map[string]int, dep int, tool string) int {
	n := def
	if dep != 0 {
		n = dep
	}
	if t, ok := tools[tool]; ok && t != 0 {
		n = t
	}
	if n < 0 {
		return 0
	}
	return n
}

// repeatTurns counts the calls of each root turn by the hash of (branch,
// tool, canonical arguments), in a map per turn: one turn's counts are
// never overwritten by another turn's calls, whatever the traffic. A turn's
// map is created by its first counted call, holds at most maxRepeatCalls
// distinct calls, and is released by the root run's AfterRun. Only when
// max turns are held at once does a new turn make room: turns older than
// maxAge (whose AfterRun never fired) go first, else the oldest. The guard
// errs by missing a loop, never by stopping a call that differs; another
// turn's traffic cannot make it forget a loop unless max turns run at once.
type repeatTurns struct {
	n      atomic.Int64 // turns held (for Pending)
	mu     sync.Mutex
	m      map[string]*repeatTurn
	max    int
	maxAge time.Duration
}

type repeatTurn struct {
	counts map[uint64]uint16
	at     time.Time
}

// maxRepeatCalls bounds the distinct calls counted in one turn: a turn that
// lists more is not looping on one call; calls past the bound are not
// counted (about 40 bytes each: at most about 160 KiB per turn).
const maxRepeatCalls = 4096

const (
	countBits = 16
	countMask = 1<<countBits - 1
)

func newRepeatTurns(max int, maxAge time.Duration) *repeatTurns {
	return &repeatTurns{m: map[string]*repeatTurn{}, max: max, maxAge: maxAge}
}

// add counts one call with hash h in turn inv and returns how many calls
// with that hash the turn made, this one included (1 when it cannot be
// counted).
func (r *repeatTurns) add(inv string, h uint64, now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.m[inv]
	if t == nil {
		if len(r.m) >= r.max {
			r.makeRoomLocked(now)
		}
		t = &repeatTurn{counts: map[uint64]uint16{}, at: now}
		r.m[inv] = t
		r.n.Add(1)
	}
	c, ok := t.counts[h]
	if !ok && len(t.counts) >= maxRepeatCalls {
		return 1
	}
	if c < countMask {
		c++
	}
	t.counts[h] = c
	return int(c)
}

// uncount takes one call with hash h back out of turn inv's count: a call
// the breaker refused or counted as a failure is the breaker's business
// (its retries reach the breaker's threshold), not a repeat of an answer.
func (r *repeatTurns) uncount(inv string, h uint64) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.m[inv]; t != nil {
		switch c := t.counts[h]; {
		case c > 1:
			t.counts[h] = c - 1
		case c == 1:
			delete(t.counts, h)
		}
	}
}

// release drops turn inv's counts (the root run's AfterRun).
func (r *repeatTurns) release(inv string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	if _, ok := r.m[inv]; ok {
		delete(r.m, inv)
		r.n.Add(-1)
	}
	r.mu.Unlock()
}

// makeRoomLocked drops the turns older than maxAge (runs whose AfterRun
// never fired: callbacks wired into an agent by hand have none), and when
// none is, the oldest turn. Callers hold r.mu.
func (r *repeatTurns) makeRoomLocked(now time.Time) {
	var oldest string
	var at time.Time
	for inv, t := range r.m {
		if now.Sub(t.at) >= r.maxAge {
			delete(r.m, inv)
			r.n.Add(-1)
			continue
		}
		if oldest == "" || t.at.Before(at) {
			oldest, at = inv, t.at
		}
	}
	if len(r.m) >= r.max && oldest != "" {
		delete(r.m, oldest)
		r.n.Add(-1)
	}
}

func (r *repeatTurns) len() int {
	if r == nil {
		return 0
	}
	return int(r.n.Load())
}

// runKey names one run's marks and end: its invocation ID and its branch
// (the sub-agents of a ParallelAgent share their invocation ID, and each
// runs its own loop).
type runKey struct{ run, branch string }

// runOf returns the run key of ctx.
func runOf(ctx agent.ReadonlyContext) runKey {
	return runKey{ctx.InvocationID(), ctx.Branch()}
}

// loopScope names the loop a call belongs to within its root turn: the
// ParallelAgent branches it runs in (ADK's Branch: a ParallelAgent's
// sub-agents are independent), those of the agent tool's caller first for
// a sub-run (f). The depth of a chain is not part of it: sub-runs of one
// caller, and an agent-tool cycle, count as one loop; sub-runs of parallel
// callers do not.
func loopScope(ctx agent.ReadonlyContext, f *chainFrame) string {
	b := ctx.Branch()
	switch {
	case f == nil:
		return b
	case b == "":
		return f.scope
	}
	return f.scope + "\x00" + b
}

// repeatEnds holds the runs whose turn the guard ended, until BeforeModel
// answers (or AfterRun releases them).
type repeatEnds struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[runKey]repeatEnd
}

type repeatEnd struct {
	tool  string
	dep   registry.Key
	calls int
}

func (e *repeatEnds) put(k runKey, r repeatEnd) {
	e.mu.Lock()
	if e.m == nil {
		e.m = map[runKey]repeatEnd{}
	}
	if _, ok := e.m[k]; !ok {
		e.m[k] = r
		e.n.Add(1)
	}
	e.mu.Unlock()
}

func (e *repeatEnds) take(k runKey) (repeatEnd, bool) {
	if e.n.Load() == 0 {
		return repeatEnd{}, false
	}
	e.mu.Lock()
	r, ok := e.m[k]
	if ok {
		delete(e.m, k)
		e.n.Add(-1)
	}
	e.mu.Unlock()
	return r, ok
}

// release drops every end held for run (any branch): its AfterRun.
func (e *repeatEnds) release(run string) {
	if e.n.Load() == 0 {
		return
	}
	e.mu.Lock()
	for k := range e.m {
		if k.run == run {
			delete(e.m, k)
			e.n.Add(-1)
		}
	}
	e.mu.Unlock()
}

func (e *repeatEnds) len() int { return int(e.n.Load()) }

// countCalls counts every function call of a model response in the root
// turn's counts and marks those that are not the first of their kind (a
// count of 2 or more: every repeat limit is at least 2) for BeforeTool.
// It runs on the model path, once per response.
func (h *Handler) countCalls(ctx agent.CallbackContext, resp *model.LLMResponse) {
	if h.repeats == nil || resp == nil || resp.Partial || resp.Content == nil {
		return
	}
	rk := runOf(ctx)
	inv, f := chainOf(ctx, rk.run)
	// The calls of this run's previous response have all been dispatched by
	// now: a mark still held is a call that never ran. Dropping it keeps
	// marks short-lived, and with them the window in which BeforeTool
	// hashes calls and takes the marks' lock. Only this branch's: a busy
	// sibling branch's responses leave this one's marks alone.
	h.marks.release(rk)
	var scope string
	var now time.Time
	for _, p := range resp.Content.Parts {
		fc := p.FunctionCall
		if fc == nil || fc.Name == "" {
			continue
		}
		if now.IsZero() {
			scope, now = loopScope(ctx, f), h.clock.Now()
		}
		hs := callHash(scope, toolHash(fc.Name), fc.Args)
		if n := h.repeats.add(inv, hs, now); n >= 2 {
			h.marks.put(rk, hs, n)
		}
	}
}

// AfterModel counts the calls of a model response for the repeated-call
// guard (countCalls). It changes nothing: it always returns (nil, nil), so
// later plugins and the agent's own callbacks still run.
func (h *Handler) AfterModel(ctx agent.CallbackContext, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	if err == nil {
		defer func() { _ = recover() }() // a fault here must not fail the model call
		h.countCalls(ctx, resp)
	}
	return nil, nil
}

// takeRepeat returns the count with which the model's response marked this
// call (countCalls) as a repeat, 0 when it did not, and removes the mark.
func (h *Handler) takeRepeat(ctx agent.ToolContext, bd *binding, args map[string]any) int {
	rk := runOf(ctx)
	_, f := chainOf(ctx, rk.run)
	n, _ := h.marks.take(rk, callHash(loopScope(ctx, f), bd.toolHash, args))
	return n
}

// uncountCall takes a call the breaker refused or counted as a failure
// back out of its turn's repeat count (repeatTurns.uncount).
func (h *Handler) uncountCall(ctx agent.ToolContext, bd *binding, args any) {
	if h.repeats == nil || bd == nil || bd.repeat <= 0 {
		return
	}
	defer func() { _ = recover() }() // never fail the call for the guard's sake
	m, _ := args.(map[string]any)
	inv, f := chainOf(ctx, ctx.InvocationID())
	h.repeats.uncount(inv, callHash(loopScope(ctx, f), bd.toolHash, m))
}

// repeatAnswer answers a call the model's response marked with count n, at
// or past the tool's repeat limit, and that the breaker admits (a call the
// breaker refuses is answered by the breaker: its payload says more). nil:
// the call goes on (shadow mode).
func (h *Handler) repeatAnswer(ctx agent.ToolContext, bd *binding, n int) map[string]any {
	// Calls count in the root's turn (a sub-agent repeating itself across
	// sub-runs is one loop); the turn that ends is the run's own (and the
	// branch's own), so that its caller can still answer (chain.go).
	rk := runOf(ctx)
	inv, _ := chainOf(ctx, rk.run)
	ends := n > bd.repeat
	if bd.shadow {
		// Shadow mode changes nothing the model reads: count, do not act.
		if ro, ok := h.obs.(RepeatObserver); ok {
			ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv, Shadow: true})
		}
		return nil
	}
	if ends {
		h.repeatEnded.put(rk, repeatEnd{tool: bd.tool, dep: bd.key, calls: n})
		ctx.Actions().Escalate = true // a LoopAgent exits after this call
	}
	if ro, ok := h.obs.(RepeatObserver); ok {
		ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv})
	}
	if h.outage(inv, bd) {
		// Its dependency was unavailable in this turn: the note must not
		// invite another try with other arguments.
		return degrade.RepeatNoteOutage(bd.tool, n-1, ends)
	}
	return degrade.RepeatNote(bd.tool, n-1, ends)
}

// outage reports whether bd's dependency was refused in turn inv, or its
// breaker is not closed now.
func (h *Handler) outage(inv string, bd *binding) bool {
	if bd.key == "" {
		return false
	}
	if bd.br != nil && bd.br.State() != registry.StateClosed {
		return true
	}
	return h.ledger.Count(inv, string(bd.key)) > 0
}

// repeatMarks holds, per run (invocation and branch), the calls its model
// responses listed that were not the first of their kind in the turn, with
// their counts in the order the model listed them, until BeforeTool meets
// them, the run's next model response drops them, or AfterRun releases
// them (a listed call that never ran: a plugin before this one answered
// it, or the tool was not found).
type repeatMarks struct {
	n  atomic.Int64 // marks held: BeforeTool looks only when there are any
	mu sync.Mutex
	m  map[runKey]map[uint64][]int
}

func (r *repeatMarks) put(run runKey, h uint64, count int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[runKey]map[uint64][]int{}
	}
	byHash := r.m[run]
	if byHash == nil {
		byHash = map[uint64][]int{}
		r.m[run] = byHash
	}
	byHash[h] = append(byHash[h], count)
	r.n.Add(1)
}

// take pops the first mark of call h in run.
func (r *repeatMarks) take(run runKey, h uint64) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := r.m[run][h]
	if len(counts) == 0 {
		return 0, false
	}
	n := counts[0]
	if len(counts) == 1 {
		delete(r.m[run], h)
		if len(r.m[run]) == 0 {
			delete(r.m, run)
		}
	} else {
		r.m[run][h] = counts[1:]
	}
	r.n.Add(-1)
	return n, true
}

// release drops the marks of run (one branch of an invocation).
func (r *repeatMarks) release(run runKey) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, counts := range r.m[run] {
		r.n.Add(-int64(len(counts)))
	}
	delete(r.m, run)
}

// releaseRun drops the marks of every branch of invocation inv (its
// AfterRun).
func (r *repeatMarks) releaseRun(inv string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, byHash := range r.m {
		if k.run != inv {
			continue
		}
		for _, counts := range byHash {
			r.n.Add(-int64(len(counts)))
		}
		delete(r.m, k)
	}
}

// runs is how many runs hold marks (for Pending).
func (r *repeatMarks) runs() int {
	if r.n.Load() == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// endRepeated ends the run rk (in the root turn inv) after the guard's last
// note: a final answer that says the request could not be completed and,
// when dependencies were unavailable in the turn, which and when to try
// again. A run inside a ParallelAgent's branch ends only that branch: its
// siblings are not looping.
func (h *Handler) endRepeated(ctx agent.CallbackContext, inv string, rk runKey, r repeatEnd) *model.LLMResponse {
	u, _ := h.ledger.UsageOf(inv)
	items := h.unavailableIn(inv)
	text := degrade.RepeatedCallMessageDuring(r.tool, items)
	resp := finalResponse(text, string(TurnEndRepeatedCall))
	h.ends.end(ctx, rk, rk.branch == "", resp)
	if rk.branch == "" {
		h.ledger.End(rk.run, h.clock.Now())
	}
	if h.obs != nil {
		h.obs.TurnEnded(ctx, TurnEndEvent{InvocationID: inv, Reason: TurnEndRepeatedCall, TurnTotal: u.Total, ModelCalls: u.ModelCalls})
	}
	return resp
}

// Hashing. callHash hashes (loop scope, tool, canonical arguments); the
// arguments are canonical in key order (the pairs of a map are combined
// by a commutative sum, so no keys are sorted and nothing allocates), in
// number forms (every number is hashed by its exact value: an integer as
// that integer, whatever its type or form — 3, 3.0, int64(3),
// json.Number("3e0") are one value, and 2^54+1 is never 2^54 —, any other
// number as the float64 encoding/json decodes it to; -0 is 0) and in
// Unicode forms (strings and keys in NFC, without default-ignorable code
// points: "Café" composed or decomposed, or with a zero-width space, soft
// hyphen, word joiner or BOM inside, is one string).

const (
	tagNil uint64 = 0x9e3779b97f4a7c15 + iota
	tagFalse
	tagTrue
	tagString
	tagNumber
	tagBigInt
	tagInt
	tagNegInt
	tagList
	tagMap
	tagOther
)

// callHash hashes a call in its loop scope (loopScope); toolHash is
// toolHash(tool), kept in the binding.
func callHash(scope string, toolHash uint64, args map[string]any) uint64 {
	h := maphash.String(hashSeed, scope) ^ toolHash
	if len(args) == 0 {
		return mix(h ^ tagMap)
	}
	return mix(h ^ hashValue(hashSeed, args, 0))
}

// toolHash is the hash of a tool's name in callHash.
func toolHash(name string) uint64 { return rotl(mix(maphash.String(hashSeed, name) ^ tagString)) }

// ArgsHash returns the canonical hash of a call's arguments that the
// repeated-call guard uses (the process's seed): equal for arguments that
// differ only in key order or number form. For tests and tools.
func ArgsHash(args map[string]any) uint64 {
	return hashValue(hashSeed, args, 0)
}

// hashSeed is the process's seed of every hash here: random, so that
// nobody outside can choose arguments that collide.
var hashSeed = maphash.MakeSeed()

// maxHashDepth bounds recursion; deeper values hash by their JSON text.
const maxHashDepth = 64

func hashValue(seed maphash.Seed, v any, depth int) uint64 {
	switch x := v.(type) {
	case nil:
		return tagNil
	case bool:
		if x {
			return tagTrue
		}
		return tagFalse
	case string:
		return mix(tagString ^ hashString(seed, x))
	case float64:
		return hashFloat(x)
	case float32:
		return hashFloat(float64(x))
	case int:
		return hashInt(int64(x))
	case int64:
		return hashInt(x)
	case int32:
		return hashInt(int64(x))
	case int16:
		return hashInt(int64(x))
	case int8:
		return hashInt(int64(x))
	case uint:
		return hashUint(uint64(x))
	case uint64:
		return hashUint(x)
	case uint32:
		return hashUint(uint64(x))
	case uint16:
		return hashUint(uint64(x))
	case uint8:
		return hashUint(uint64(x))
	case json.Number:
		return hashNumber(seed, string(x))
	}
	if depth >= maxHashDepth {
		return hashOther(seed, v, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		var sum uint64
		for k, e := range x {
			sum += mix(hashString(seed, k) ^ rotl(hashValue(seed, e, depth+1)))
		}
		return mix(tagMap ^ sum ^ uint64(len(x)))
	case []any:
		h := tagList ^ uint64(len(x))
		for _, e := range x {
			h = mix(h ^ hashValue(seed, e, depth+1))
		}
		return mix(h)
	}
	return hashOther(seed, v, depth)
}

// hashOther hashes any other value (typed maps, slices, structs) as its
// JSON encoding decoded again (numbers as json.Number, so that integers
// stay exact), so that it hashes like the same arguments written as JSON;
// past maxHashDepth, by the JSON text itself (encoding/json sorts map keys
// and writes numbers in one form).
func hashOther(seed maphash.Seed, v any, depth int) uint64 {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return tagNil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return mix(tagOther ^ maphash.String(seed, fmt.Sprintf("%T %v", v, v)))
	}
	if depth < maxHashDepth {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var back any
		if dec.Decode(&back) == nil {
			return hashValue(seed, back, depth+1)
		}
	}
	return mix(tagOther ^ maphash.Bytes(seed, b))
}

// hashFloat hashes a float64: an integral one as the integer it is (when
// one of int64 or uint64 holds it), any other by its bits.
func hashFloat(f float64) uint64 {
	switch {
	case f != f:
		return mix(tagNumber ^ 0x7ff8000000000001) // every NaN
	case f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63:
		return hashInt(int64(f)) // exact: f is integral and in range (-0 is 0)
	case f == math.Trunc(f) && f >= 0 && f < 1<<64:
		return hashUint(uint64(f))
	}
	return mix(tagNumber ^ math.Float64bits(f))
}

// hashInt and hashUint hash an integer exactly: equal values of any
// integer type hash alike, different values differently.
func hashInt(i int64) uint64 {
	if i >= 0 {
		return hashUint(uint64(i))
	}
	return mix(tagNegInt ^ uint64(i))
}

func hashUint(u uint64) uint64 { return mix(tagInt ^ u) }

// hashNumber hashes a JSON number's text by its value: an integer written
// without fraction or exponent exactly (in 64 bits, or as its canonical
// decimal beyond them, unless a float64 holds it exactly), any other number
// as the float64 encoding/json decodes it to (so 3e0 is 3, and 0.1 is the
// float64 0.1), and text that is no number as text.
func hashNumber(seed maphash.Seed, s string) uint64 {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return hashInt(i)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return hashUint(u)
	}
	if integerText(s) {
		var z big.Int
		if _, ok := z.SetString(s, 10); ok {
			if f, acc := new(big.Float).SetInt(&z).Float64(); acc == big.Exact {
				return hashFloat(f)
			}
			return mix(tagBigInt ^ maphash.String(seed, z.String()))
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return hashFloat(f)
	}
	return mix(tagOther ^ maphash.String(seed, s))
}

// integerText reports whether s is an optional minus sign and digits.
func integerText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hashString hashes a string in its canonical Unicode form (canonString);
// ASCII, the common case, is its own form and is hashed as it is.
func hashString(seed maphash.Seed, s string) uint64 {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return maphash.String(seed, canonString(s))
		}
	}
	return maphash.String(seed, s)
}

// canonString returns s without default-ignorable code points, in NFC.
// Invalid UTF-8 is kept byte for byte (it cannot be normalised).
func canonString(s string) string {
	if !utf8.ValidString(s) {
		return s
	}
	if strings.IndexFunc(s, defaultIgnorable) >= 0 {
		s = strings.Map(func(r rune) rune {
			if defaultIgnorable(r) {
				return -1
			}
			return r
		}, s)
	}
	return norm.NFC.String(s)
}

// defaultIgnorable reports whether r is a Default_Ignorable_Code_Point
// (Unicode's DerivedCoreProperties): invisible when not supported, such as
// the soft hyphen, zero-width space and joiners, word joiner, bidi
// controls, variation selectors, the BOM and the tag characters.
func defaultIgnorable(r rune) bool {
	switch {
	case r < 0xAD:
		return false
	case r == 0xAD, r == 0x34F, r == 0x61C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r >= 0x180B && r <= 0x180F, r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x206F, r == 0x3164, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF,
		r == 0xFFA0, r >= 0xFFF0 && r <= 0xFFF8, r >= 0x1BCA0 && r <= 0x1BCA3,
		r >= 0x1D173 && r <= 0x1D17A, r >= 0xE0000 && r <= 0xE0FFF:
		return true
	}
	return false
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func rotl(x uint64) uint64 { return x<<29 | x>>35 }

func anyRepeatLimit(deps map[registry.Key]Dependency) bool {
	for _, d := range deps {
		if d.RepeatLimit > 0 {
			return true
		}
	}
	return false
}
