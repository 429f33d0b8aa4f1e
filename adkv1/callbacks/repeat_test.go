package callbacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

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
		if dec.Decode(&num) == nil && callbacks.ArgsHash(num) != h {
			t.Fatalf("%s hashes differently with json.Number", data)
		}
	})
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
		if _, inv := h.Pending(); inv != 1 {
			t.Fatalf("invocations = %d, want 1 (the turn to end)", inv)
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
	if _, inv := h.Pending(); inv != 1 {
		t.Fatalf("invocations = %d, want 1 (the second listed call's mark)", inv)
	}
	// The run's next response: the calls before it were dispatched, so the
	// mark of the one that never ran is dropped.
	h.AfterModel(&fakeCbCtx{inv: "e-1"}, &model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
	if _, inv := h.Pending(); inv != 0 {
		t.Fatalf("invocations = %d after the run's next response, want 0", inv)
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
