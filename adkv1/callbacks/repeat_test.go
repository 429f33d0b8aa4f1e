package callbacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestArgsHashCanonical: key order and number forms do not change the
// hash; different values do.
func TestArgsHashCanonical(t *testing.T) {
	same := [][2]map[string]any{
		{{"a": 1.0, "b": "x"}, {"b": "x", "a": 1.0}},
		{{"n": 3.0}, {"n": 3}},
		{{"n": 3.0}, {"n": int64(3)}},
		{{"n": 3.0}, {"n": json.Number("3e0")}},
		{{"n": 0.0}, {"n": math.Copysign(0, -1)}},
		{{"n": float64(1 << 60)}, {"n": int64(1 << 60)}},
		{{"o": map[string]any{"x": 1.0, "y": []any{"a", 2.0}}}, {"o": map[string]any{"y": []any{"a", 2}, "x": 1}}},
		{{"s": []string{"a", "b"}}, {"s": []any{"a", "b"}}},
		{{}, nil},
	}
	for i, c := range same {
		if a, b := callbacks.ArgsHash(c[0]), callbacks.ArgsHash(c[1]); a != b {
			t.Errorf("%d: %v and %v hash differently", i, c[0], c[1])
		}
	}
	differ := [][2]map[string]any{
		{{"a": 1.0}, {"a": 2.0}},
		{{"a": 1.0}, {"b": 1.0}},
		{{"a": "1"}, {"a": 1.0}},
		{{"a": []any{1.0, 2.0}}, {"a": []any{2.0, 1.0}}},
		{{"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 1.0}},
		{{"a": nil}, {}},
		{{"a": true}, {"a": false}},
		{{"a": map[string]any{"b": 1.0}}, {"a.b": 1.0}},
		{{"n": int64(1<<62 + 1)}, {"n": int64(1<<62 + 3)}},
	}
	for i, c := range differ {
		if a, b := callbacks.ArgsHash(c[0]), callbacks.ArgsHash(c[1]); a == b {
			t.Errorf("%d: %v and %v hash alike", i, c[0], c[1])
		}
	}
}

// FuzzArgsHash: arguments written as JSON hash the same however their keys
// are ordered and however their numbers are decoded (float64 or
// json.Number), and hashing never panics.
func FuzzArgsHash(f *testing.F) {
	for _, s := range []string{`{"id":"1"}`, `{"b":2,"a":[1,2.0,{"z":null,"y":true}]}`, `{"n":1e300,"m":-0}`, `{"big":12345678901234567890}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return
		}
		h := callbacks.ArgsHash(m)
		canon, err := json.Marshal(m) // keys sorted, numbers in one form
		if err != nil {
			return
		}
		var back map[string]any
		if err := json.Unmarshal(canon, &back); err != nil {
			t.Fatal(err)
		}
		if callbacks.ArgsHash(back) != h {
			t.Fatalf("%s and %s hash differently", data, canon)
		}
		dec := json.NewDecoder(bytesReader(data))
		dec.UseNumber()
		var num map[string]any
		if dec.Decode(&num) != nil {
			return
		}
		// With json.Number, integers are exact: the same as the float64
		// form when every integer fits a float64 exactly, and the same
		// however the json.Number form is re-encoded.
		hn := callbacks.ArgsHash(num)
		if exactInFloat(num) && hn != h {
			t.Fatalf("%s hashes differently with json.Number", data)
		}
		b, err := json.Marshal(num)
		if err != nil {
			t.Fatal(err)
		}
		dec = json.NewDecoder(bytesReader(b))
		dec.UseNumber()
		var num2 map[string]any
		if err := dec.Decode(&num2); err != nil {
			t.Fatal(err)
		}
		if callbacks.ArgsHash(num2) != hn {
			t.Fatalf("%s and %s hash differently (json.Number)", data, b)
		}
	})
}

// exactInFloat reports whether every integer written without fraction or
// exponent in v equals the float64 encoding/json decodes it to.
func exactInFloat(v any) bool {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return false
		}
		var z big.Int
		if _, ok := z.SetString(s, 10); !ok {
			return false
		}
		fi, acc := big.NewFloat(f).Int(nil)
		return acc == big.Exact && fi.Cmp(&z) == 0
	case map[string]any:
		for _, e := range x {
			if !exactInFloat(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !exactInFloat(e) {
				return false
			}
		}
	}
	return true
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// actCtx is a fake tool context with event actions.
type actCtx struct {
	fakeToolCtx
	acts session.EventActions
}

func (c *actCtx) Actions() *session.EventActions { return &c.acts }

// TestRepeatStateReleasedByAfterRun: the guard's only per-invocation state,
// the turn it must end, is released by AfterRun when no model call comes
// (the run was cancelled, say), and by the next BeforeModel otherwise.
func TestRepeatStateReleasedByAfterRun(t *testing.T) {
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	h, err := callbacks.New(callbacks.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	tl := &fakeTool{name: "get_invoice"}
	for _, viaModel := range []bool{false, true} {
		ctx := &actCtx{fakeToolCtx: fakeToolCtx{std: context.Background(), inv: fmt.Sprint("e-", viaModel), call: "c"}}
		var got []any
		for range 4 {
			// The model lists the call (AfterModel counts it), then it runs.
			listed := &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: map[string]any{"id": "7"}}}}}}
			h.AfterModel(&fakeCbCtx{inv: ctx.inv}, listed, nil)
			r, _ := h.BeforeTool(ctx, tl, map[string]any{"id": "7"})
			got = append(got, r["turn_ended"])
			h.AfterTool(ctx, tl, map[string]any{"id": "7"}, nil, nil)
		}
		if got[0] != nil || got[1] != nil || got[2] != false || got[3] != true || !ctx.acts.Escalate {
			t.Fatalf("turn_ended of the 4 calls = %v, escalate %v", got, ctx.acts.Escalate)
		}
		if _, inv := h.Pending(); inv != 2 {
			t.Fatalf("invocations = %d, want 2 (the turn's counts and the turn to end)", inv)
		}
		if viaModel {
			resp, err := h.BeforeModel(&fakeCbCtx{inv: ctx.inv}, &model.LLMRequest{})
			if err != nil || resp == nil || resp.CustomMetadata["adkbreaker"].(map[string]any)["reason"] != "repeated_call" {
				t.Fatalf("BeforeModel = %v, %v", resp, err)
			}
		}
		h.AfterRun(&fakeInvCtx{inv: ctx.inv})
		if tk, inv := h.Pending(); tk != 0 || inv != 0 {
			t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
		}
	}
}

// fakeCbCtx is a fake callback context: what BeforeModel reads.
type fakeCbCtx struct {
	agent.CallbackContext
	inv string
}

func (c *fakeCbCtx) InvocationID() string { return c.inv }
func (c *fakeCbCtx) Value(any) any        { return nil } // no chain frame: a root run
func (c *fakeCbCtx) Branch() string       { return "" }
func (c *fakeCbCtx) AgentName() string    { return "agent" }

// TestListedCallsThatNeverRanAreReleased: a call the model listed again
// but that never reached BeforeTool (another plugin answered it, or the
// tool does not exist) leaves a mark; AfterRun releases it.
func TestListedCallsThatNeverRanAreReleased(t *testing.T) {
	h, err := callbacks.New(callbacks.Config{Registry: registry.MustNew()})
	if err != nil {
		t.Fatal(err)
	}
	listed := &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: map[string]any{"id": "7"}}},
		{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: map[string]any{"id": "7"}}},
	}}}
	h.AfterModel(&fakeCbCtx{inv: "e-1"}, listed, nil)
	if _, inv := h.Pending(); inv != 2 {
		t.Fatalf("invocations = %d, want 2 (the turn's counts, the second listed call's mark)", inv)
	}
	// The run's next response: the calls before it were dispatched, so the
	// mark of the one that never ran is dropped.
	h.AfterModel(&fakeCbCtx{inv: "e-1"}, &model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
	if _, inv := h.Pending(); inv != 1 {
		t.Fatalf("invocations = %d after the run's next response, want 1 (the turn's counts)", inv)
	}
	h.AfterModel(&fakeCbCtx{inv: "e-1"}, listed, nil)
	h.AfterRun(&fakeInvCtx{inv: "e-1"})
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("left behind: %d tickets, %d invocations", tk, inv)
	}
	// A partial response and a failed model call count nothing.
	h.AfterModel(&fakeCbCtx{inv: "e-2"}, &model.LLMResponse{Partial: true, Content: listed.Content}, nil)
	h.AfterModel(&fakeCbCtx{inv: "e-2"}, listed, errors.New("boom"))
	if _, inv := h.Pending(); inv != 0 {
		t.Fatalf("invocations = %d after a partial response and a failed call, want 0", inv)
	}
}

// TestArgsHashExactIntegers: integers are hashed by their exact value:
// distinct integers beyond 2^53 never collide (as json.Number, int64,
// uint64 or in typed slices), and equal values in any form hash alike.
func TestArgsHashExactIntegers(t *testing.T) {
	const p54 = 1 << 54
	same := [][2]map[string]any{
		{{"n": json.Number("18014398509481985")}, {"n": int64(p54 + 1)}},
		{{"n": json.Number("18014398509481984")}, {"n": float64(p54)}},
		{{"n": json.Number("18446744073709551615")}, {"n": uint64(math.MaxUint64)}},
		{{"n": json.Number("-9223372036854775808")}, {"n": int64(math.MinInt64)}},
		{{"n": []int64{p54 + 1, 3}}, {"n": []any{json.Number("18014398509481985"), 3.0}}},
		{{"n": json.Number("1e2")}, {"n": 100}},
		{{"n": json.Number("0.1")}, {"n": 0.1}},
		{{"n": json.Number("18446744073709551616")}, {"n": float64(1 << 64)}}, // 2^64: a float64 holds it exactly
	}
	for i, c := range same {
		if a, b := callbacks.ArgsHash(c[0]), callbacks.ArgsHash(c[1]); a != b {
			t.Errorf("%d: %v and %v hash differently", i, c[0], c[1])
		}
	}
	differ := [][2]map[string]any{
		{{"n": json.Number("18014398509481985")}, {"n": json.Number("18014398509481984")}},
		{{"n": []int64{p54 + 1}}, {"n": []int64{p54}}},
		{{"n": []uint64{math.MaxUint64}}, {"n": []uint64{math.MaxUint64 - 1}}},
		{{"n": json.Number("123456789012345678901234567891")}, {"n": json.Number("123456789012345678901234567890")}},
		{{"n": int64(-1)}, {"n": uint64(math.MaxUint64)}},
		{{"n": 0.5}, {"n": 1}},
	}
	for i, c := range differ {
		if a, b := callbacks.ArgsHash(c[0]), callbacks.ArgsHash(c[1]); a == b {
			t.Errorf("%d: %v and %v hash alike", i, c[0], c[1])
		}
	}
}

// TestArgsHashUnicodeForms: a string composed (NFC) or decomposed (NFD),
// or with default-ignorable code points inside (zero-width space, soft
// hyphen, BOM, word joiner), is one argument; in keys too; a different
// string is not.
func TestArgsHashUnicodeForms(t *testing.T) {
	nfc := "Caf\u00e9 Z\u00fcrich"
	forms := []string{
		"Cafe\u0301 Zu\u0308rich",           // NFD
		"Caf\u00e9\u200b Z\u00fcrich",       // zero-width space
		"Caf\u00ad\u00e9 Z\ufeff\u00fcrich", // soft hyphen + BOM
		"Caf\u00e9 Z\u2060\u00fcrich",       // word joiner
	}
	want := callbacks.ArgsHash(map[string]any{"city": nfc})
	for _, f := range forms {
		if got := callbacks.ArgsHash(map[string]any{"city": f}); got != want {
			t.Errorf("%q hashes differently from %q", f, nfc)
		}
		if got := callbacks.ArgsHash(map[string]any{f: 1}); got != callbacks.ArgsHash(map[string]any{nfc: 1}) {
			t.Errorf("key %q hashes differently from %q", f, nfc)
		}
	}
	if callbacks.ArgsHash(map[string]any{"city": "Cafe Zurich"}) == want {
		t.Error("Cafe Zurich hashes like Café Zürich")
	}
}

// FuzzArgsHashText: a string hashes like its NFC and NFD forms and like
// itself with a zero-width space inserted; hashing never panics.
func FuzzArgsHashText(f *testing.F) {
	for _, s := range []string{"Café Zürich", "gold price today", "한국어", "e\u0301\u0301", "\xff\xfe", ""} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, at int) {
		h := callbacks.ArgsHash(map[string]any{"q": s})
		if !utf8.ValidString(s) {
			return
		}
		for _, v := range []string{norm.NFC.String(s), norm.NFD.String(s)} {
			if callbacks.ArgsHash(map[string]any{"q": v}) != h {
				t.Fatalf("%q and %q hash differently", s, v)
			}
		}
		// Insert a zero-width space at a rune boundary.
		rs := []rune(s)
		i := 0
		if len(rs) > 0 {
			i = (at%len(rs) + len(rs)) % len(rs)
		}
		z := string(rs[:i]) + "\u200b" + string(rs[i:])
		if callbacks.ArgsHash(map[string]any{"q": z}) != h {
			t.Fatalf("%q and %q hash differently", s, z)
		}
	})
}

// TestRepeatCountsSurviveOtherSessions: one turn's loop is never forgotten
// because other turns list calls in between: 65,536 distinct calls of
// other invocations between a loop's steps (the old shared 8,192-slot
// table forgot the loop after them) and the loop's 3rd identical call is
// still answered with the note.
func TestRepeatCountsSurviveOtherSessions(t *testing.T) {
	h, err := callbacks.New(callbacks.Config{Registry: registry.MustNew()})
	if err != nil {
		t.Fatal(err)
	}
	tl := &fakeTool{name: "get_invoice"}
	args := map[string]any{"id": "7"}
	listed := func(a map[string]any) *model.LLMResponse {
		return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: a}}}}}
	}
	ctx := &actCtx{fakeToolCtx: fakeToolCtx{std: context.Background(), inv: "e-loop", call: "c"}}
	other := &fakeCbCtx{}
	for step := range 3 {
		h.AfterModel(&fakeCbCtx{inv: "e-loop"}, listed(args), nil)
		r, _ := h.BeforeTool(ctx, tl, args)
		h.AfterTool(ctx, tl, args, nil, nil)
		if step == 2 {
			if r["status"] != "repeated_call" {
				t.Fatalf("3rd identical call answered %v, want the repeat note", r)
			}
			break
		}
		if r != nil {
			t.Fatalf("call %d answered %v", step+1, r)
		}
		for i := range 1 << 15 { // 65,536 over the two gaps
			other.inv = fmt.Sprintf("e-other-%d-%d", step, i)
			h.AfterModel(other, listed(map[string]any{"id": other.inv}), nil)
			h.AfterRun(&fakeInvCtx{inv: other.inv})
		}
	}
	h.AfterRun(&fakeInvCtx{inv: "e-loop"})
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
	}
}

// TestRepeatStateBounded: the guard's per-turn counts are bounded: at most
// MaxInvocations turns are held (runs whose AfterRun never fires make room
// for new ones, oldest first), and a turn listing more than 4,096 distinct
// calls still counts the ones it holds.
func TestRepeatStateBounded(t *testing.T) {
	h, err := callbacks.New(callbacks.Config{Registry: registry.MustNew(), MaxInvocations: 2})
	if err != nil {
		t.Fatal(err)
	}
	listed := func(a map[string]any) *model.LLMResponse {
		return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{Name: "get_invoice", Args: a}}}}}
	}
	for i := range 5 { // no AfterRun: hand-wired callbacks
		h.AfterModel(&fakeCbCtx{inv: fmt.Sprint("e-", i)}, listed(map[string]any{"id": "1"}), nil)
	}
	if _, inv := h.Pending(); inv != 2 {
		t.Fatalf("invocations = %d, want 2 (MaxInvocations)", inv)
	}
	// One turn, 5,000 distinct calls, then the first one twice more: the
	// third is still noted.
	tl := &fakeTool{name: "get_invoice"}
	ctx := &actCtx{fakeToolCtx: fakeToolCtx{std: context.Background(), inv: "e-big", call: "c"}}
	cb := &fakeCbCtx{inv: "e-big"}
	for i := range 5000 {
		h.AfterModel(cb, listed(map[string]any{"id": fmt.Sprint(i)}), nil)
	}
	var r map[string]any
	for range 2 {
		h.AfterModel(cb, listed(map[string]any{"id": "0"}), nil)
		r, _ = h.BeforeTool(ctx, tl, map[string]any{"id": "0"})
		h.AfterTool(ctx, tl, map[string]any{"id": "0"}, nil, nil)
	}
	if r["status"] != "repeated_call" {
		t.Fatalf("3rd identical call answered %v, want the note", r)
	}
	for _, inv := range []string{"e-3", "e-4", "e-big"} {
		h.AfterRun(&fakeInvCtx{inv: inv})
	}
	if tk, inv := h.Pending(); tk != 0 || inv != 0 {
		t.Fatalf("state left: %d tickets, %d invocations", tk, inv)
	}
}
