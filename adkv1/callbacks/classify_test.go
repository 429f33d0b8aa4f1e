package callbacks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/registry"
)

type reporting struct{ o registry.Outcome }

func (r reporting) Error() string                    { return "typed" }
func (r reporting) BreakerOutcome() registry.Outcome { return r.o }

type coded struct{ code int }

// codedWrap is a client error that reports StatusCode() 0 (no response) and
// wraps the transport cause.
type codedWrap struct {
	code int
	err  error
}

func (c codedWrap) Error() string   { return "no response" }
func (c codedWrap) StatusCode() int { return c.code }
func (c codedWrap) Unwrap() error   { return c.err }

func (c coded) Error() string   { return "coded" }
func (c coded) StatusCode() int { return c.code }

func TestClassify(t *testing.T) {
	synErr := json.Unmarshal([]byte("{x"), &map[string]any{}) // a *json.SyntaxError
	for _, tc := range []struct {
		name string
		err  error
		want registry.Outcome
	}{
		{"nil", nil, registry.Success},
		{"outcome reporter wins", fmt.Errorf("wrapped: %w", reporting{registry.Excluded}), registry.Excluded},
		{"confirmation required", fmt.Errorf("x %w", tool.ErrConfirmationRequired), registry.Excluded},
		{"confirmation rejected", fmt.Errorf("x %w", tool.ErrConfirmationRejected), registry.Excluded},
		{"no result", fmt.Errorf("invoice: %w", callbacks.ErrNoResult), registry.Excluded},
		{"caller cancelled", fmt.Errorf("get: %w", context.Canceled), registry.Excluded},
		{"our deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), registry.Failure},
		{"genai 429", fmt.Errorf("failed to call model: %w", genai.APIError{Code: 429}), registry.Failure},
		{"genai 503", genai.APIError{Code: 503}, registry.Failure},
		{"genai 400", genai.APIError{Code: 400}, registry.Excluded},
		{"genai 404", genai.APIError{Code: 404}, registry.Excluded},
		{"http 500", &callbacks.StatusError{Code: 500}, registry.Failure},
		{"http 429", &callbacks.StatusError{Code: 429}, registry.Failure},
		{"http 403", &callbacks.StatusError{Code: 403}, registry.Excluded},
		{"any StatusCode() 502", fmt.Errorf("x: %w", coded{502}), registry.Failure},
		{"any StatusCode() 422", coded{422}, registry.Excluded},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, registry.Failure},
		{"url timeout", &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "read", Err: syscall.ETIMEDOUT}}, registry.Failure},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), registry.Failure},
		{"eof", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), registry.Failure},
		{"json syntax (bad args)", synErr, registry.Excluded},
		{"validation message", errors.New("validating root: required: missing properties: [\"id\"]"), registry.Excluded},
		{"unexpected args", errors.New("unexpected args type, got: string"), registry.Excluded},
		{"panic", errors.New("panic in tool \"x\": boom\nstack: ..."), registry.Failure},
		{"mcp isError answer", errors.New("Tool execution failed. Details: no such file"), registry.Success},
		{"mcp isError wrapping a cause is not an answer", fmt.Errorf("Tool execution failed. %w", io.EOF), registry.Failure},
		{"unknown", errors.New("something broke"), registry.Failure},
		{"status 0 around a refused dial", codedWrap{0, syscall.ECONNREFUSED}, registry.Failure},
		{"genai code 0", genai.APIError{Code: 0}, registry.Failure},
		{"status 304 says nothing", codedWrap{304, context.Canceled}, registry.Excluded},
	} {
		if got := callbacks.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestRetryHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"nil", nil, 0},
		{"plain", errors.New("x"), 0},
		{"status error", &callbacks.StatusError{Code: 429, RetryAfter: 7 * time.Second}, 7 * time.Second},
		{"retry info string", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}}}, 30 * time.Second},
		{"retry info seconds object", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": map[string]any{"seconds": float64(12)}}}}, 12 * time.Second},
		{"other detail", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.QuotaFailure"}}}, 0},
		{"bad delay", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}}}, 0},
		{"huge delay string is capped, not ignored", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "10000000000s"}}}, 24 * time.Hour},
		{"huge delay object is capped, not negative", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": map[string]any{"seconds": 1e10}}}}, 24 * time.Hour},
		{"delay object with nanos", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": map[string]any{"seconds": float64(1), "nanos": 5e8}}}}, 1500 * time.Millisecond},
	} {
		if got := callbacks.RetryHint(tc.err); got != tc.want {
			t.Errorf("%s: RetryHint = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// keyedTool reports its own dependency key.
type keyedTool struct {
	fakeTool
	dep string
}

func (k *keyedTool) DependencyKey() string { return k.dep }

func TestResolution(t *testing.T) {
	reg := registry.MustNew()
	h, err := callbacks.New(callbacks.Config{Registry: reg, Mappings: []callbacks.Mapping{
		{Tools: []string{"get_invoice"}, Dependency: "billing"},
		{Tools: []string{"crm_*"}, Dependency: "crm"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &fakeToolCtx{std: context.Background(), inv: "e-1", call: "adk-call-0001"}
	for _, tc := range []struct {
		tool tool.Tool
		want registry.Key
	}{
		{&fakeTool{name: "get_invoice"}, "billing"},                                      // explicit mapping
		{&fakeTool{name: "crm_lookup"}, "crm"},                                           // pattern
		{&keyedTool{fakeTool{name: "crm_sync"}, "mcp:crm"}, "crm"},                       // mapping beats DependencyKey
		{&keyedTool{fakeTool{name: "search"}, "mcp:search-server"}, "mcp:search-server"}, // DependencyKey
		{&fakeTool{name: "weather"}, "weather"},                                          // own name
	} {
		if r, _ := h.BeforeTool(ctx, tc.tool, nil); r != nil {
			t.Fatalf("%s short-circuited", tc.tool.Name())
		}
		h.AfterTool(ctx, tc.tool, nil, nil, nil)
		if _, ok := reg.Lookup(tc.want); !ok {
			t.Errorf("%s: no breaker %q", tc.tool.Name(), tc.want)
		}
	}
	if n := reg.Len(); n != 4 {
		t.Errorf("breakers = %d, want 4 (billing, crm, mcp:search-server, weather)", n)
	}
	if _, err := callbacks.New(callbacks.Config{Registry: reg, Mappings: []callbacks.Mapping{
		{Tools: []string{"a"}, Dependency: "x"}, {Tools: []string{"a"}, Dependency: "y"}, {Tools: []string{"["}, Dependency: "z"}, {Dependency: ""},
	}, ShortCircuitLimit: -1}); err == nil {
		t.Fatal("invalid mappings accepted")
	} else {
		for _, want := range []string{`"a" already mapped`, `invalid name or pattern "["`, "mappings[3].dependency", "mappings[3].tools", "short_circuit_limit"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
	}
}
