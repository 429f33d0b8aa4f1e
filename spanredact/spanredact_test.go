package spanredact_test

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkbreaker/adkbreaker/spanredact"
)

func stub(attrs ...attribute.KeyValue) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{Name: "execute_tool x", Attributes: attrs}.Snapshot()
}

func TestNewReportsEveryProblem(t *testing.T) {
	_, err := spanredact.New(
		spanredact.WithMode("", spanredact.Redact),
		spanredact.WithMode("k", spanredact.Mode(9)),
		spanredact.WithHashKey([]byte("short")),
		spanredact.WithLimit(10),
		nil,
	)
	if err == nil {
		t.Fatal("New accepted invalid options")
	}
	for _, want := range []string{"empty attribute key", `mode of "k"`, "hash key", "limit", "nil option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// A span without payloads is handed on as it is: no copy.
func TestSpanWithoutPayloadIsUnchanged(t *testing.T) {
	red, _ := spanredact.New()
	s := stub(attribute.String("gen_ai.tool.name", "x"))
	if got := red.Span(s); fmt.Sprintf("%T", got) != fmt.Sprintf("%T", s) {
		t.Fatal("span copied although nothing was redacted")
	}
}

func TestModes(t *testing.T) {
	const secret = `{"note":"token=abcdef123456","password":"hunter2"}`
	run := func(opts ...spanredact.Option) map[string]string {
		t.Helper()
		red, err := spanredact.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		s := tracetest.SpanStub{
			Attributes: []attribute.KeyValue{
				attribute.String(spanredact.KeyToolCallArgs, secret),
				attribute.String(spanredact.KeyToolResponse, secret),
				attribute.StringSlice(spanredact.KeyLLMRequest, []string{"Bearer abcdefghijkl", "fine"}),
				attribute.Int("n", 7),
			},
			Status: sdktrace.Status{Code: codes.Error, Description: "token=abcdef123456"},
			Events: []sdktrace.Event{{Name: "exception", Attributes: []attribute.KeyValue{
				attribute.String(spanredact.KeyExceptionMessage, "password=hunter2"),
				attribute.String(spanredact.KeyExceptionStacktrace, "goroutine 1 [running]"),
				attribute.String("exception.type", "*errors.errorString"),
			}}},
		}.Snapshot()
		got := red.Span(s)
		out := map[string]string{"status": got.Status().Description}
		for _, kv := range got.Attributes() {
			out[string(kv.Key)] = kv.Value.String()
		}
		for _, kv := range got.Events()[0].Attributes {
			out[string(kv.Key)] = kv.Value.String()
		}
		if s.Attributes()[0].Value.AsString() != secret {
			t.Fatal("the original span was modified")
		}
		return out
	}

	d := run()
	if want := `{"note":"[redacted]","password":"[redacted]"}`; d[spanredact.KeyToolCallArgs] != want {
		t.Errorf("redact: args %s, want %s", d[spanredact.KeyToolCallArgs], want)
	}
	if d[spanredact.KeyLLMRequest] != `["[redacted]","fine"]` || d["n"] != "7" || d["exception.type"] != "*errors.errorString" {
		t.Errorf("redact: %v", d)
	}
	if _, ok := d[spanredact.KeyExceptionStacktrace]; ok || d["status"] != "[redacted]" || d[spanredact.KeyExceptionMessage] != "[redacted]" {
		t.Errorf("redact defaults: %v", d)
	}

	k := run(spanredact.WithMode(spanredact.KeyToolResponse, spanredact.Keep))
	if k[spanredact.KeyToolResponse] != secret {
		t.Errorf("keep: %s", k[spanredact.KeyToolResponse])
	}

	h := run(spanredact.WithMode(spanredact.KeyToolCallArgs, spanredact.Hash), spanredact.WithMode(spanredact.KeyToolResponse, spanredact.Hash))
	if a := h[spanredact.KeyToolCallArgs]; !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+16 || a != h[spanredact.KeyToolResponse] {
		t.Errorf("plain hash: %v", h)
	}
	hk := run(spanredact.WithMode(spanredact.KeyToolCallArgs, spanredact.Hash), spanredact.WithHashKey([]byte("0123456789abcdef")))
	if a := hk[spanredact.KeyToolCallArgs]; !strings.HasPrefix(a, "hmac-sha256:") || strings.TrimPrefix(a, "hmac-") == h[spanredact.KeyToolCallArgs] {
		t.Errorf("keyed hash: %v", hk)
	}

	dr := run(spanredact.WithMode(spanredact.KeyToolCallArgs, spanredact.Drop), spanredact.WithMode(spanredact.KeyStatusDescription, spanredact.Drop))
	if _, ok := dr[spanredact.KeyToolCallArgs]; ok || dr["status"] != "" {
		t.Errorf("drop: %v", dr)
	}
}

// Values are bounded; very deep JSON is cut off rather than walked.
func TestBounds(t *testing.T) {
	red, _ := spanredact.New(spanredact.WithLimit(64))
	got := red.Span(stub(attribute.String(spanredact.KeyToolResponse, strings.Repeat("a ", 500)))).Attributes()[0].Value.AsString()
	if len(got) > 64 {
		t.Errorf("len %d > 64", len(got))
	}
	deep := strings.Repeat("[", 100) + `"x"` + strings.Repeat("]", 100)
	red, _ = spanredact.New()
	got = red.Span(stub(attribute.String(spanredact.KeyToolResponse, deep))).Attributes()[0].Value.AsString()
	if !strings.Contains(got, "[redacted]") || strings.Contains(got, `"x"`) {
		t.Errorf("deep JSON: %s", got)
	}
}
