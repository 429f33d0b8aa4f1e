package callbacks

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// The repeated-call guard ("doom loop"): within one invocation, the N-th
// call of one tool with the same canonical arguments is answered with a
// note (degrade.RepeatNote) instead of running the tool again, and the
// next one ends the turn: its call escalates and the following model call
// is answered by BeforeModel with a final answer (TurnEndRepeatedCall).
// Calls are counted where the model lists them, in AfterModel (every call
// of a response, parallel ones included, whatever happens to it next), so
// that successes, failures and short-circuits all count; a call that is
// not the first of its kind in the turn is marked for BeforeTool, which
// answers it (before the breaker is asked) once it reaches the limit. The
// tool path itself pays one atomic load while no call is marked.

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

// repeatTable counts calls by the hash of (invocation, tool, canonical
// arguments) in a fixed table of packed words (48-bit tag, 16-bit count),
// two ways per bucket, updated with one compare-and-swap: no lock, no
// allocation, and no per-invocation entry to release. Invocation IDs are
// unique, so an entry of an ended invocation is never matched again; it
// is overwritten when its bucket is needed. A collision of tags needs
// equal 48 bits of a 64-bit hash whose 12 low bits matched too: the guard
// errs, if ever, by forgetting a count under heavy load (a bucket
// overwritten between two repeats), never by stopping different calls.
type repeatTable struct {
	slots [repeatSlots]atomic.Uint64
}

const (
	repeatSlots = 1 << 13 // 64 KiB per handler
	repeatMask  = repeatSlots - 2
	countBits   = 16
	countMask   = 1<<countBits - 1
)

// add counts one call with hash h and returns how many calls with that
// hash the table holds now.
func (t *repeatTable) add(h uint64) int {
	tag := h &^ countMask
	if tag == 0 {
		tag = 1 << countBits // 0 is an empty slot
	}
	b := int(h>>3) & repeatMask // an even index: the bucket's first way
	for {
		s0, s1 := &t.slots[b], &t.slots[b+1]
		v0, v1 := s0.Load(), s1.Load()
		slot, v, nv := s0, v0, tag|1
		switch {
		case v0&^countMask == tag:
			nv = v0 + min(1, countMask-v0&countMask)
		case v1&^countMask == tag:
			slot, v, nv = s1, v1, v1+min(1, countMask-v1&countMask)
		case v1&countMask < v0&countMask:
			slot, v = s1, v1 // replace the way with the smaller count
		}
		if slot.CompareAndSwap(v, nv) {
			return int(nv & countMask)
		}
	}
}

// repeatEnds holds the invocations whose turn the guard ended, until
// BeforeModel answers (or AfterRun releases them).
type repeatEnds struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[string]repeatEnd
}

type repeatEnd struct {
	tool  string
	dep   registry.Key
	calls int
}

func (e *repeatEnds) put(inv string, r repeatEnd) {
	e.mu.Lock()
	if e.m == nil {
		e.m = map[string]repeatEnd{}
	}
	if _, ok := e.m[inv]; !ok {
		e.m[inv] = r
		e.n.Add(1)
	}
	e.mu.Unlock()
}

func (e *repeatEnds) take(inv string) (repeatEnd, bool) {
	if e.n.Load() == 0 {
		return repeatEnd{}, false
	}
	e.mu.Lock()
	r, ok := e.m[inv]
	if ok {
		delete(e.m, inv)
		e.n.Add(-1)
	}
	e.mu.Unlock()
	return r, ok
}

func (e *repeatEnds) len() int { return int(e.n.Load()) }

// countCalls counts every function call of a model response in the root
// turn's table and marks those that are not the first of their kind (a
// count of 2 or more: every repeat limit is at least 2) for BeforeTool.
// It runs on the model path, once per response.
func (h *Handler) countCalls(ctx agent.CallbackContext, resp *model.LLMResponse) {
	if h.repeats == nil || resp == nil || resp.Partial || resp.Content == nil {
		return
	}
	sub := ctx.InvocationID()
	inv, _ := chainOf(ctx, sub)
	// The calls of this run's previous response have all been dispatched by
	// now: a mark still held is a call that never ran. Dropping it keeps
	// marks short-lived, and with them the window in which BeforeTool
	// hashes calls and takes the marks' lock.
	h.marks.release(sub)
	for _, p := range resp.Content.Parts {
		fc := p.FunctionCall
		if fc == nil || fc.Name == "" {
			continue
		}
		hs := callHash(inv, toolHash(fc.Name), fc.Args)
		if n := h.repeats.add(hs); n >= 2 {
			h.marks.put(sub, hs, n)
		}
	}
}

// AfterModel counts the calls of a model response for the repeated-call
// guard (countCalls). It changes nothing: it always returns (nil, nil), so
// later plugins and the agent's own callbacks still run.
func (h *Handler) AfterModel(ctx agent.CallbackContext, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	if err == nil {
		defer func() { _ = recover() }() // a fault here must not fail the model call
		if h.countsTokens() {
			h.countTokens(ctx, resp) // tokens.go
		}
		h.countCalls(ctx, resp)
	}
	return nil, nil
}

// checkRepeat answers a call of a tool whose repeat limit is on, when the
// model's response marked it (countCalls) as a repeat at or past the
// limit; nil otherwise (the call goes on).
func (h *Handler) checkRepeat(ctx agent.ToolContext, bd *binding, args map[string]any) map[string]any {
	// Calls count in the root's turn (a sub-agent repeating itself across
	// sub-runs is one loop); the turn that ends is the run's own, sub, so
	// that its caller can still answer (chain.go).
	sub := ctx.InvocationID()
	inv, _ := chainOf(ctx, sub)
	n, ok := h.marks.take(sub, callHash(inv, bd.toolHash, args))
	if !ok || n < bd.repeat {
		return nil
	}
	ends := n > bd.repeat
	if bd.shadow {
		// Shadow mode changes nothing the model reads: count, do not act.
		if ro, ok := h.obs.(RepeatObserver); ok {
			ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv, Shadow: true})
		}
		return nil
	}
	if ends {
		h.repeatEnded.put(sub, repeatEnd{tool: bd.tool, dep: bd.key, calls: n})
		ctx.Actions().Escalate = true // a LoopAgent exits after this call
	}
	if ro, ok := h.obs.(RepeatObserver); ok {
		ro.RepeatedCall(ctx, RepeatEvent{Dependency: bd.key, Tool: bd.tool, Calls: n, Limit: bd.repeat, EndsTurn: ends, InvocationID: inv})
	}
	return degrade.RepeatNote(bd.tool, n-1, ends)
}

// repeatMarks holds, per run (invocation), the calls its model responses
// listed that were not the first of their kind in the turn, with their
// counts in the order the model listed them, until BeforeTool meets them or
// AfterRun releases them (a listed call that never ran: a plugin before
// this one answered it, or the tool was not found).
type repeatMarks struct {
	n  atomic.Int64 // marks held: BeforeTool looks only when there are any
	mu sync.Mutex
	m  map[string]map[uint64][]int
}

func (r *repeatMarks) put(run string, h uint64, count int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[uint64][]int{}
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
func (r *repeatMarks) take(run string, h uint64) (int, bool) {
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

// release drops run's marks (its AfterRun).
func (r *repeatMarks) release(run string) {
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

// runs is how many runs hold marks (for Pending).
func (r *repeatMarks) runs() int {
	if r.n.Load() == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// endRepeated ends the run sub (in the root turn inv; the same for a root
// run) after the guard's last note: a final answer that says the request
// could not be completed.
func (h *Handler) endRepeated(ctx agent.CallbackContext, inv, sub string, r repeatEnd) *model.LLMResponse {
	u, _ := h.ledger.UsageOf(inv)
	h.ledger.End(sub, h.clock.Now())
	if h.obs != nil {
		h.obs.TurnEnded(ctx, TurnEndEvent{InvocationID: inv, Reason: TurnEndRepeatedCall, TurnTotal: u.Total, ModelCalls: u.ModelCalls})
	}
	return finalResponse(degrade.RepeatedCallMessage(r.tool), string(TurnEndRepeatedCall))
}

// Hashing. callHash hashes (invocation, tool, canonical arguments); the
// arguments are canonical in key order (the pairs of a map are combined
// by a commutative sum, so no keys are sorted and nothing allocates) and in
// number forms (every number that is an exact float64 hashes as that
// float64: 3, 3.0, int64(3), json.Number("3e0") are one value; -0 is 0).

const (
	tagNil uint64 = 0x9e3779b97f4a7c15 + iota
	tagFalse
	tagTrue
	tagString
	tagNumber
	tagBigInt
	tagList
	tagMap
	tagOther
)

// callHash hashes a call; toolHash is toolHash(tool), kept in the binding.
func callHash(inv string, toolHash uint64, args map[string]any) uint64 {
	h := maphash.String(hashSeed, inv) ^ toolHash
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
		return mix(tagString ^ maphash.String(seed, x))
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
	case json.Number: // as encoding/json would decode it into an any
		if f, err := x.Float64(); err == nil {
			return hashFloat(f)
		}
		return mix(tagNumber ^ maphash.String(seed, x.String()))
	}
	if depth >= maxHashDepth {
		return hashOther(seed, v, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		var sum uint64
		for k, e := range x {
			sum += mix(maphash.String(seed, k) ^ rotl(hashValue(seed, e, depth+1)))
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
// JSON encoding decoded again, so that it hashes like the same arguments
// written as JSON; past maxHashDepth, by the JSON text itself (encoding/json
// sorts map keys and writes numbers in one form).
func hashOther(seed maphash.Seed, v any, depth int) uint64 {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return tagNil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return mix(tagOther ^ maphash.String(seed, fmt.Sprintf("%T %v", v, v)))
	}
	if depth < maxHashDepth {
		var back any
		if json.Unmarshal(b, &back) == nil {
			return hashValue(seed, back, depth+1)
		}
	}
	return mix(tagOther ^ maphash.Bytes(seed, b))
}

func hashFloat(f float64) uint64 {
	if f == 0 {
		f = 0 // -0 is 0
	}
	if f != f {
		return mix(tagNumber ^ 0x7ff8000000000001) // every NaN
	}
	return mix(tagNumber ^ math.Float64bits(f))
}

// hashInt hashes an integer as the float64 it equals, when one does.
func hashInt(i int64) uint64 {
	if f := float64(i); f < 1<<63 && int64(f) == i {
		return hashFloat(f)
	}
	return mix(tagBigInt ^ uint64(i))
}

func hashUint(u uint64) uint64 {
	if f := float64(u); f < 1<<64 && uint64(f) == u {
		return hashFloat(f)
	}
	return mix(tagBigInt ^ u)
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
