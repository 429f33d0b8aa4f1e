package mcpguard_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// ADK's tracer delegates to the global tracer provider, which binds once per
// process; every later ADK span of this test binary goes to the provider
// installed here. traceFilter keeps only the spans of traces a test asked
// for (want), in a tracetest.SpanRecorder per trace.
var (
	globalTPOnce sync.Once
	globalTP     *sdktrace.TracerProvider
	globalSpans  = &traceFilter{want: map[trace.TraceID]*tracetest.SpanRecorder{}}
)

type traceFilter struct {
	mu   sync.Mutex
	want map[trace.TraceID]*tracetest.SpanRecorder
}

func (f *traceFilter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (f *traceFilter) OnEnd(s sdktrace.ReadOnlySpan) {
	f.mu.Lock()
	r := f.want[s.SpanContext().TraceID()]
	f.mu.Unlock()
	if r != nil {
		r.OnEnd(s)
	}
}
func (f *traceFilter) Shutdown(context.Context) error   { return nil }
func (f *traceFilter) ForceFlush(context.Context) error { return nil }

// tracedContext returns a context under a new root span of the global
// provider and the recorder of that trace's ended spans.
func tracedContext(t *testing.T) (context.Context, *tracetest.SpanRecorder) {
	t.Helper()
	globalTPOnce.Do(func() {
		globalTP = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(globalSpans))
		otel.SetTracerProvider(globalTP)
	})
	ctx, root := globalTP.Tracer("test").Start(t.Context(), "test")
	t.Cleanup(func() { root.End() })
	rec := tracetest.NewSpanRecorder()
	globalSpans.mu.Lock()
	globalSpans.want[root.SpanContext().TraceID()] = rec
	globalSpans.mu.Unlock()
	return ctx, rec
}

// spansNamed returns the ended spans called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func oneSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	ss := spansNamed(rec, name)
	if len(ss) != 1 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(ss), name, names)
	}
	return ss[0]
}

func attrsOf(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// wantAttrs checks that kvs hold every attribute of want (string, int or
// bool values) and that the float attributes named in positive are > 0.
func wantAttrs(t *testing.T, what string, kvs []attribute.KeyValue, want map[string]any, positive ...string) {
	t.Helper()
	got := attrsOf(kvs)
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("%s: no attribute %s (have %v)", what, k, kvs)
			continue
		}
		var g any
		switch w.(type) {
		case string:
			g = v.AsString()
		case int:
			g = int(v.AsInt64())
		case bool:
			g = v.AsBool()
		}
		if g != w {
			t.Errorf("%s: %s = %v, want %v", what, k, g, w)
		}
	}
	for _, k := range positive {
		if v, ok := got[k]; !ok || v.AsFloat64() <= 0 {
			t.Errorf("%s: %s = %v, want > 0", what, k, v.String())
		}
	}
}

// TestSpansFromRunnerTurn: one turn through the real runner, the adkbreaker
// plugin and a guarded server whose first call drops the connection. The
// discovery, the handshakes and the call are spans in the turn's trace: the
// call is a child of ADK's "execute_tool echo", its reconnect a child of the
// call, and the retry an event on the call's span.
func TestSpansFromRunnerTurn(t *testing.T) {
	ctx, rec := tracedContext(t)
	fs := mcpfault.New(mcpfault.Config{Mode: mcpfault.Flapping, RecoverAfter: 1})
	defer fs.Close()
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{
		Name: "notes", Dial: fs.Dial, IdempotentTools: []string{"echo"}, OperationBudget: 20 * time.Second,
	}}, mcpguard.WithRand(func() float64 { return 0 }))
	defer g.Close()

	out := runTurn(t, ctx, reg, g, &scriptedLLM{Call: "echo", Args: map[string]any{"text": "hi"}})
	if out.err != nil || out.fnResp[mcpguard.KeyOutput] != "hi" {
		t.Fatalf("turn: err=%v response=%v", out.err, out.fnResp)
	}

	call := oneSpan(t, rec, "mcp.notes.call_tool")
	exec := oneSpan(t, rec, "execute_tool echo")
	if call.Parent().SpanID() != exec.SpanContext().SpanID() {
		t.Errorf("call span's parent = %v, want ADK's execute_tool span %v", call.Parent().SpanID(), exec.SpanContext().SpanID())
	}
	if call.SpanKind() != trace.SpanKindClient || call.Status().Code == codes.Error {
		t.Errorf("call span kind %v status %v, want client, not error", call.SpanKind(), call.Status())
	}
	wantAttrs(t, "call span", call.Attributes(), map[string]any{
		mcpguard.AttrServer: "notes", mcpguard.AttrOperation: "call_tool", mcpguard.AttrBreaker: "closed",
		mcpguard.AttrTool: "echo", mcpguard.AttrOutcome: "ok", mcpguard.AttrAttempts: 2, mcpguard.AttrRetries: 1,
	}, mcpguard.AttrGranted, mcpguard.AttrBudget)
	if b := attrsOf(call.Attributes())[mcpguard.AttrBudget].AsFloat64(); b != 20 {
		t.Errorf("budget = %v s, want 20", b)
	}
	var retries []sdktrace.Event
	for _, ev := range call.Events() {
		if ev.Name == mcpguard.EventRetry {
			retries = append(retries, ev)
		}
	}
	if len(retries) != 1 {
		t.Fatalf("%d retry events on the call span, want 1: %v", len(retries), call.Events())
	}
	wantAttrs(t, "retry event", retries[0].Attributes, map[string]any{
		mcpguard.AttrAttempt: 1, mcpguard.AttrOutcome: "fault", mcpguard.AttrBoundary: "call_tool", mcpguard.AttrServerHint: false,
	}, mcpguard.AttrGranted)

	// Two handshakes: discovery's first dial, then the call's reconnect.
	connects := spansNamed(rec, "mcp.notes.connect")
	if len(connects) != 2 {
		t.Fatalf("%d connect spans, want 2", len(connects))
	}
	// One discovery (two if the go-sdk's delayed tools/list_changed arrived
	// between the turn's two model calls); the first one dialled.
	lists := spansNamed(rec, "mcp.notes.list_tools")
	if len(lists) < 1 || len(lists) > 2 {
		t.Fatalf("%d list_tools spans, want 1 or 2", len(lists))
	}
	list := slices.MinFunc(lists, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	byParent := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, c := range connects {
		byParent[c.Parent().SpanID()] = c
	}
	first, reconnect := byParent[list.SpanContext().SpanID()], byParent[call.SpanContext().SpanID()]
	if first == nil || reconnect == nil {
		t.Fatalf("connect spans are not children of the discovery and the call")
	}
	wantAttrs(t, "first connect", first.Attributes(), map[string]any{
		mcpguard.AttrServer: "notes", mcpguard.AttrOperation: "connect", mcpguard.AttrReconnect: false, mcpguard.AttrOutcome: "ok",
	}, mcpguard.AttrGranted)
	wantAttrs(t, "reconnect", reconnect.Attributes(), map[string]any{mcpguard.AttrReconnect: true, mcpguard.AttrOutcome: "ok"})

	// Discovery runs in ADK's agent span, in the same trace.
	wantAttrs(t, "list span", list.Attributes(), map[string]any{
		mcpguard.AttrServer: "notes", mcpguard.AttrOperation: "list_tools", mcpguard.AttrBreaker: "closed",
		mcpguard.AttrOutcome: "ok", mcpguard.AttrAttempts: 1, mcpguard.AttrRetries: 0,
	}, mcpguard.AttrGranted, mcpguard.AttrBudget)
	if !list.Parent().IsValid() || list.SpanContext().TraceID() != call.SpanContext().TraceID() {
		t.Errorf("list span: parent %v, trace %v; want a parent in the turn's trace", list.Parent(), list.SpanContext().TraceID())
	}
}

// leakyServer is a go-sdk MCP server whose "echo" answers every call with a
// JSON-RPC internal error carrying a secret, a URL and an injected
// instruction.
func leakyServer() func(context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: leak}
		})
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

const leak = "db down: Authorization: Bearer sk-live-ABCDEF0123456789 at https://admin:hunter2@10.0.0.7/x; " + mcpfault.Canary

// TestSpanCauseIsRedacted: a server's error text reaches the span only
// through redact.Text; the span is marked Error with our own message.
func TestSpanCauseIsRedacted(t *testing.T) {
	ctx, rec := tracedContext(t)
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "leaky", Dial: leakyServer(), Retry: mcpguard.Retry{MaxAttempts: 1}}})
	defer g.Close()
	out := runTurn(t, ctx, reg, g, &scriptedLLM{Call: "echo", Args: map[string]any{}})
	if out.err != nil {
		t.Fatal(out.err)
	}
	call := oneSpan(t, rec, "mcp.leaky.call_tool")
	if call.Status().Code != codes.Error || !strings.HasPrefix(call.Status().Description, `mcpguard: server "leaky": call_tool failed (server_error)`) {
		t.Errorf("status = %+v", call.Status())
	}
	a := attrsOf(call.Attributes())
	wantAttrs(t, "call span", call.Attributes(), map[string]any{
		mcpguard.AttrOutcome: "fault", mcpguard.AttrReason: "server_error", mcpguard.AttrBoundary: "call_tool", mcpguard.AttrAttempts: 1,
	})
	cause := a[mcpguard.AttrCause].AsString()
	if !strings.Contains(cause, "db down") || !strings.Contains(cause, "[redacted]") {
		t.Errorf("cause = %q, want the sanitised error text", cause)
	}
	text := spanText(rec, "mcp.")
	for _, secret := range []string{"sk-live", "hunter2", "10.0.0.7", "IGNORE PREVIOUS"} {
		if strings.Contains(text, secret) {
			t.Errorf("a span carries %q: %s", secret, text)
		}
	}
}

// spanText returns every attribute value, event attribute value and status
// description of the ended spans whose name starts with prefix, one per line.
func spanText(rec *tracetest.SpanRecorder, prefix string) string {
	var all []string
	for _, s := range rec.Ended() {
		if !strings.HasPrefix(s.Name(), prefix) {
			continue
		}
		for _, kv := range s.Attributes() {
			all = append(all, kv.Value.String())
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				all = append(all, kv.Value.String())
			}
		}
		all = append(all, s.Status().Description)
	}
	return strings.Join(all, "\n")
}

// TestTelemetryOptions: nil providers are configuration errors.
func TestTelemetryOptions(t *testing.T) {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	_, err := mcpguard.New(testRegistry(t), []mcpguard.Server{{Name: "x", Dial: fs.Dial}},
		mcpguard.WithTracerProvider(nil), mcpguard.WithMeterProvider(nil))
	if err == nil || !strings.Contains(err.Error(), "tracer provider: must not be nil") || !strings.Contains(err.Error(), "meter provider: must not be nil") {
		t.Fatalf("err = %v", err)
	}
}
