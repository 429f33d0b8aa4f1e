package failover_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
)

// recorder is a minimal recording TracerProvider, installed once as the
// global provider (ADK's tracer delegates to it).
type recorder struct {
	embedded.TracerProvider
	mu    sync.Mutex
	spans []*recSpan
}

var (
	recOnce sync.Once
	rec     = &recorder{}
)

func installRecorder() *recorder {
	recOnce.Do(func() { otel.SetTracerProvider(rec) })
	return rec
}

func (r *recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return recTracer{r: r} }

// find returns the spans named name carrying attribute k = v.
func (r *recorder) find(name, k, v string) []*recSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*recSpan
	for _, s := range r.spans {
		if s.name == name && s.attr(k) == v {
			out = append(out, s)
		}
	}
	return out
}

type recTracer struct {
	embedded.Tracer
	r *recorder
}

func (t recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	var tid trace.TraceID
	var sid trace.SpanID
	rand.Read(tid[:])
	rand.Read(sid[:])
	s := &recSpan{name: name, r: t.r, attrs: map[attribute.Key]attribute.Value{},
		sc: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})}
	s.SetAttributes(cfg.Attributes()...)
	t.r.mu.Lock()
	t.r.spans = append(t.r.spans, s)
	t.r.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

type recSpan struct {
	embedded.Span
	r      *recorder
	name   string
	mu     sync.Mutex
	attrs  map[attribute.Key]attribute.Value
	events []string
	ended  bool
	sc     trace.SpanContext
}

func (s *recSpan) attr(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attrs[attribute.Key(k)].String()
}

func (s *recSpan) End(...trace.SpanEndOption) { s.mu.Lock(); s.ended = true; s.mu.Unlock() }
func (s *recSpan) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	var b strings.Builder
	b.WriteString(name)
	for _, kv := range cfg.Attributes() {
		b.WriteString(" " + string(kv.Key) + "=" + kv.Value.String())
	}
	s.mu.Lock()
	s.events = append(s.events, b.String())
	s.mu.Unlock()
}
func (s *recSpan) AddLink(trace.Link)                      {}
func (s *recSpan) IsRecording() bool                       { return true }
func (s *recSpan) RecordError(error, ...trace.EventOption) {}
func (s *recSpan) SpanContext() trace.SpanContext          { return s.sc }
func (s *recSpan) SetStatus(codes.Code, string)            {}
func (s *recSpan) SetName(string)                          {}
func (s *recSpan) TracerProvider() trace.TracerProvider    { return s.r }
func (s *recSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	for _, a := range kv {
		s.attrs[a.Key] = a.Value
	}
	s.mu.Unlock()
}

func TestGeminiFailoverAnnotatesGenerateContentSpan(t *testing.T) {
	r := installRecorder()
	e := newE2E(t, testPolicy())
	e.primary.setDefault(reply{status: 503, body: body503})
	if tr := e.turn(t, false); tr.err != nil {
		t.Fatal(tr.err)
	}
	spans := r.find("generate_content assistant-model", failover.AttrEndpoint, string(e.fKey))
	if len(spans) != 2 {
		t.Fatalf("%d generate_content spans carry the fallback endpoint, want 2", len(spans))
	}
	s := spans[0]
	for k, want := range map[string]string{
		failover.AttrEndpointModel:  "fallback-model",
		failover.AttrFailoverFrom:   string(e.pKey),
		failover.AttrFailoverReason: "server_error",
		failover.AttrFailovers:      "1",
	} {
		if got := s.attr(k); got != want {
			t.Errorf("span %s = %q, want %q", k, got, want)
		}
	}
	s.mu.Lock()
	events := strings.Join(s.events, "\n")
	s.mu.Unlock()
	if !strings.Contains(events, failover.EventFailover+" from="+string(e.pKey)+" to="+string(e.fKey)+" reason=server_error") {
		t.Errorf("span events:\n%s", events)
	}
}
