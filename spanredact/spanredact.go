package spanredact

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/adkbreaker/adkbreaker/redact"
)

// Mode says what happens to one attribute's value on export.
type Mode uint8

const (
	// Keep exports the value as it is. Use it to exempt a default key.
	Keep Mode = iota
	// Redact passes the value through the payload sanitiser (redact.Text):
	// secret-looking tokens, URLs and private addresses become
	// "[redacted]", injected-instruction phrasing becomes "[removed]",
	// control and bidi characters are dropped and the value is bounded.
	// A JSON object or array (ADK serialises tool arguments and responses
	// as JSON) is sanitised leaf by leaf and stays JSON; the values of
	// members whose name looks like a credential ("password", "api_key",
	// "authorization", …) are replaced whole. A string that holds a JSON
	// object or array (a response passed on as text) is sanitised as JSON
	// in turn, up to four levels down.
	Redact
	// Hash replaces the value by a short digest, so equal values can still
	// be correlated: "sha256:" and the first 16 hex digits of the plain
	// SHA-256 of the value, or, with WithHashKey, "hmac-sha256:" and the
	// first 16 hex digits of its HMAC-SHA-256. Prefer a key: a plain hash
	// of a short or guessable value (a password, an account number) can be
	// reversed by trying candidates.
	Hash
	// Drop removes the attribute.
	Drop
)

// String returns "keep", "redact", "hash" or "drop".
func (m Mode) String() string {
	switch m {
	case Keep:
		return "keep"
	case Redact:
		return "redact"
	case Hash:
		return "hash"
	case Drop:
		return "drop"
	default:
		return fmt.Sprintf("mode(%d)", uint8(m))
	}
}

// Attribute keys that carry payloads, with their default mode.
const (
	// KeyToolCallArgs is the JSON of a tool call's arguments, as the model
	// wrote them, on ADK's "execute_tool {tool}" span (ADK v1.7.0
	// internal/telemetry: gcp.vertex.agent.tool_call_args).
	KeyToolCallArgs = "gcp.vertex.agent.tool_call_args"
	// KeyToolResponse is the JSON of a tool's response on "execute_tool
	// {tool}" (including an MCP server's output, and {"error": …} with a
	// failed tool's error text), and of the whole merged function-response
	// event on "execute_tool (merged)".
	KeyToolResponse = "gcp.vertex.agent.tool_response"
	// KeyLLMRequest and KeyLLMResponse are the model request and response
	// that ADK for Python writes on its call_llm span. ADK Go v1.7.0 writes
	// model content only to OpenTelemetry log records, not to spans; the
	// keys are covered so that a later release, or a Python agent sharing
	// the pipeline, is redacted too.
	KeyLLMRequest  = "gcp.vertex.agent.llm_request"
	KeyLLMResponse = "gcp.vertex.agent.llm_response"
	// The content attributes of the OpenTelemetry GenAI semantic
	// conventions (opt-in there): model input and output messages, system
	// instructions, tool call arguments and results, as newer
	// instrumentations write them. ADK Go v1.7.0 does not.
	KeyInputMessages      = "gen_ai.input.messages"
	KeyOutputMessages     = "gen_ai.output.messages"
	KeySystemInstructions = "gen_ai.system_instructions"
	KeyToolCallArguments  = "gen_ai.tool.call.arguments"
	KeyToolCallResult     = "gen_ai.tool.call.result"
	// KeyExceptionMessage is the error text of an "exception" event
	// (span.RecordError): ADK records a failed tool's or model call's error
	// text verbatim.
	KeyExceptionMessage = "exception.message"
	// KeyExceptionStacktrace is an "exception" event's stack trace.
	KeyExceptionStacktrace = "exception.stacktrace"
	// KeyStatusDescription stands for the span's status description, which
	// is not an attribute: ADK sets it to the same error text. Exporters for
	// formats without a status (Zipkin, say) write it under this name.
	KeyStatusDescription = "otel.status_description"
)

// DefaultLimit bounds a redacted value, in bytes.
const DefaultLimit = 4096

// Defaults returns the default mode of every payload key: Redact, except
// stack traces, which are dropped.
func Defaults() map[string]Mode {
	return map[string]Mode{
		KeyToolCallArgs:        Redact,
		KeyToolResponse:        Redact,
		KeyLLMRequest:          Redact,
		KeyLLMResponse:         Redact,
		KeyInputMessages:       Redact,
		KeyOutputMessages:      Redact,
		KeySystemInstructions:  Redact,
		KeyToolCallArguments:   Redact,
		KeyToolCallResult:      Redact,
		KeyExceptionMessage:    Redact,
		KeyStatusDescription:   Redact,
		KeyExceptionStacktrace: Drop,
	}
}

// Option configures New. Options apply in order; later ones win.
type Option interface{ apply(*settings) }

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

type settings struct {
	modes   map[string]Mode
	hashKey []byte
	limit   int
	errs    []error
}

// WithMode sets the mode of one attribute key, on spans and on span events
// alike (KeyStatusDescription: the status description). It overrides the
// default for that key; Keep exempts it.
func WithMode(key string, m Mode) Option {
	return optionFunc(func(s *settings) {
		if key == "" {
			s.errs = append(s.errs, errors.New("mode: empty attribute key"))
			return
		}
		if m > Drop {
			s.errs = append(s.errs, fmt.Errorf("mode of %q: unknown mode %d", key, m))
			return
		}
		s.modes[key] = m
	})
}

// WithHashKey makes Hash mode keyed: HMAC-SHA-256 with key (at least 16
// bytes) instead of a plain SHA-256.
func WithHashKey(key []byte) Option {
	return optionFunc(func(s *settings) {
		if len(key) < 16 {
			s.errs = append(s.errs, fmt.Errorf("hash key: must be at least 16 bytes, got %d", len(key)))
			return
		}
		s.hashKey = append([]byte(nil), key...)
	})
}

// WithLimit bounds a redacted value, in bytes. If not given, DefaultLimit.
// A value cut to the limit is no longer valid JSON.
func WithLimit(n int) Option {
	return optionFunc(func(s *settings) {
		if n < 64 {
			s.errs = append(s.errs, fmt.Errorf("limit: must be at least 64 bytes, got %d", n))
			return
		}
		s.limit = n
	})
}

// Redactor rewrites ended spans' payload attributes. It is safe for
// concurrent use.
type Redactor struct {
	modes   map[attribute.Key]Mode
	status  Mode
	hashKey []byte
	limit   int
}

// New returns a Redactor with the default modes (Defaults) changed by
// opts. Invalid options return one error listing every problem.
func New(opts ...Option) (*Redactor, error) {
	s := settings{modes: Defaults(), limit: DefaultLimit}
	for _, o := range opts {
		if o == nil {
			s.errs = append(s.errs, errors.New("nil option"))
			continue
		}
		o.apply(&s)
	}
	if err := errors.Join(s.errs...); err != nil {
		return nil, fmt.Errorf("spanredact: %w", err)
	}
	r := &Redactor{modes: map[attribute.Key]Mode{}, hashKey: s.hashKey, limit: s.limit}
	for k, m := range s.modes {
		if k == KeyStatusDescription {
			r.status = m
			continue
		}
		if m != Keep {
			r.modes[attribute.Key(k)] = m
		}
	}
	return r, nil
}

// Span returns s with its payload attributes rewritten: span attributes,
// event attributes and the status description. A span with nothing to
// rewrite is returned as it is; otherwise the result is a new read-only
// view and s is not modified.
func (r *Redactor) Span(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	attrs, ac := r.attrs(s.Attributes())
	events, ec := r.events(s.Events())
	st, sc := s.Status(), false
	if st.Description != "" && r.status != Keep {
		st.Description, sc = r.text(st.Description, r.status), true
	}
	if !ac && !ec && !sc {
		return s
	}
	return &span{ReadOnlySpan: s, attrs: attrs, events: events, status: st}
}

// span is a redacted view of an ended span. Embedding the original keeps
// every other method (and methods the SDK adds later) delegating to it.
type span struct {
	sdktrace.ReadOnlySpan
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	status sdktrace.Status
}

func (s *span) Attributes() []attribute.KeyValue { return s.attrs }
func (s *span) Events() []sdktrace.Event         { return s.events }
func (s *span) Status() sdktrace.Status          { return s.status }

func (r *Redactor) attrs(in []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	first := -1
	for i, kv := range in {
		if r.modes[kv.Key] != Keep {
			first = i
			break
		}
	}
	if first < 0 {
		return in, false
	}
	out := make([]attribute.KeyValue, first, len(in))
	copy(out, in[:first])
	for _, kv := range in[first:] {
		m := r.modes[kv.Key]
		switch m {
		case Keep:
			out = append(out, kv)
		case Drop:
		default:
			out = append(out, attribute.KeyValue{Key: kv.Key, Value: r.value(kv.Value, m)})
		}
	}
	return out, true
}

func (r *Redactor) events(in []sdktrace.Event) ([]sdktrace.Event, bool) {
	var out []sdktrace.Event
	for i, ev := range in {
		attrs, changed := r.attrs(ev.Attributes)
		if !changed {
			if out != nil {
				out = append(out, ev)
			}
			continue
		}
		if out == nil {
			out = append(make([]sdktrace.Event, 0, len(in)), in[:i]...)
		}
		ev.Attributes = attrs
		out = append(out, ev)
	}
	if out == nil {
		return in, false
	}
	return out, true
}

func (r *Redactor) value(v attribute.Value, m Mode) attribute.Value {
	if m == Hash {
		return attribute.StringValue(r.hash(v.String()))
	}
	switch v.Type() {
	case attribute.STRING:
		return attribute.StringValue(r.text(v.AsString(), m))
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice()
		for i, s := range ss {
			ss[i] = r.text(s, m)
		}
		return attribute.StringSliceValue(ss)
	default:
		return v // numbers and booleans carry no text
	}
}

func (r *Redactor) text(s string, m Mode) string {
	switch m {
	case Hash:
		return r.hash(s)
	case Drop:
		return ""
	}
	return r.sanitise(s)
}

func (r *Redactor) hash(s string) string {
	var h hash.Hash
	prefix := "sha256:"
	if r.hashKey != nil {
		h, prefix = hmac.New(sha256.New, r.hashKey), "hmac-sha256:"
	} else {
		h = sha256.New()
	}
	h.Write([]byte(s))
	return prefix + hex.EncodeToString(h.Sum(nil)[:8])
}

// sanitise is Redact mode: JSON is sanitised leaf by leaf, anything else as
// one text.
func (r *Redactor) sanitise(s string) string {
	t := strings.TrimSpace(s)
	if len(t) > 1 && (t[0] == '{' || t[0] == '[') {
		if out, ok := r.sanitiseJSON(t, 0); ok {
			return out
		}
	}
	return redact.Text(s, r.limit)
}

// leaf sanitises a JSON string: one that holds a JSON object or array (a
// response passed on as text, a request body) as JSON, up to maxEmbed
// levels of embedding, so that its credential-named members are replaced
// whole as they are at the top level; any other as text.
func (r *Redactor) leaf(s string, embed int) string {
	if t := strings.TrimSpace(s); embed < maxEmbed && len(t) > 1 && (t[0] == '{' || t[0] == '[') {
		if out, ok := r.sanitiseJSON(t, embed+1); ok {
			return out
		}
	}
	return redact.Text(s, r.limit)
}

// maxDepth bounds the JSON walk; deeper values are replaced whole.
const maxDepth = 32

// maxEmbed bounds how many levels of JSON embedded in JSON strings are
// sanitised as JSON; deeper ones are sanitised as text.
const maxEmbed = 4

// sanitiseJSON re-emits the JSON document t in its own order, leaf by leaf:
// member names and strings through redact.Text, a credential-named member's
// value replaced whole (see credentialValue), numbers, booleans and null
// as they are, values deeper than maxDepth replaced whole. It reads t as a
// stream and stops once the output is past the limit, so that a span
// attribute of megabytes (a whole LLM request) costs what its first few
// kilobytes cost, in span.End on the call path. ok is false when t turns
// out not to be one JSON value before that point: the caller treats it as
// text. Every byte of the output comes from a sanitised token, so an early
// stop leaves nothing unsanitised. embed counts the JSON strings t is
// embedded in (leaf).
func (r *Redactor) sanitiseJSON(t string, embed int) (out string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var b strings.Builder
	type frame struct {
		object  bool
		n       int  // members or elements written
		inValue bool // object: the member name is written, its value is next
	}
	var stack []frame
	// wrote ends a value: the enclosing container counts it.
	wrote := func() {
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			top.n++
			top.inValue = false
		}
	}
	stop := r.limit + 64
	for b.Len() <= stop {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 && b.Len() > 0 {
			break
		}
		if err != nil {
			return "", false
		}
		if len(stack) == 0 && b.Len() > 0 {
			return "", false // more than one value
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b.WriteByte(byte(d))
			wrote()
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.object && !top.inValue {
				name, _ := tok.(string)
				if top.n > 0 {
					b.WriteByte(',')
				}
				writeString(&b, redact.Text(name, 128))
				b.WriteByte(':')
				if !sensitiveName(name) {
					top.inValue = true
					continue
				}
				// A credential-named member: its value is read past (never
				// copied: it may be the bulk of the attribute) and replaced
				// or kept (credentialValue).
				v, err := dec.Token()
				if err != nil {
					return "", false
				}
				if d, isDelim := v.(json.Delim); isDelim && (d == '{' || d == '[') && !skipContainer(dec) {
					return "", false
				}
				b.WriteString(credentialValue(name, v))
				wrote()
				continue
			}
			if !top.object && top.n > 0 {
				b.WriteByte(',')
			}
		}
		d, isDelim := tok.(json.Delim) // '{' or '[' here
		if len(stack) > maxDepth {
			// Too deep: the value is replaced whole, a container read past
			// without being written.
			if isDelim && !skipContainer(dec) {
				return "", false
			}
			writeString(&b, redacted)
			wrote()
			continue
		}
		if isDelim {
			stack = append(stack, frame{object: d == '{'})
			b.WriteByte(byte(d))
			continue
		}
		switch x := tok.(type) {
		case string:
			writeString(&b, r.leaf(x, embed))
		case json.Number:
			b.WriteString(x.String())
		case bool:
			b.WriteString(strconv.FormatBool(x))
		case nil:
			b.WriteString("null")
		}
		if len(stack) == 0 {
			return "", false // a bare scalar: sanitise passes only '{' or '['
		}
		wrote()
	}
	return redact.Printable(b.String(), r.limit), true
}

// credentialValue is what a credential-named member's value (its first
// token) becomes: a container or a non-empty string is replaced whole (its
// content alone may not look like a secret: "hunter2"), as is a number
// under a name that makes numbers secret (a PIN, a numeric password);
// booleans, null, an empty string and other numbers ("max_tokens": 100)
// stay.
func credentialValue(name string, v json.Token) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case string:
		if x == "" {
			return `""`
		}
	case json.Number:
		if !secretNumberName(name) {
			return x.String()
		}
	}
	return `"` + redacted + `"`
}

// skipContainer reads past the rest of a container whose opening delimiter
// was just read. It reports false on a decoding error.
func skipContainer(dec *json.Decoder) bool {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return true
}

// writeString writes s as a JSON string, escaped as encoding/json does.
func writeString(b *strings.Builder, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

const redacted = "[redacted]"

// credentialNames are substrings of member names whose values are replaced
// whole: their value alone may not look like a secret ("hunter2").
var credentialNames = []string{
	"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key",
	"authorization", "bearer", "cookie", "credential", "private_key", "private-key",
	"privatekey", "session", "signature", "passcode",
}

// credentialWords are short names that mark a credential only as a whole
// word of the member name ("auth", "x-auth", "userPin"), never as a part
// of one ("author", "shipping").
var credentialWords = []string{"auth", "pin", "otp"}

// numericSecretNames are credential names whose numeric values are secrets
// too (a PIN, a one-time code, a numeric password); under the other names a
// number is a count or a limit ("max_tokens": 100) and stays.
var numericSecretNames = []string{"password", "passwd", "pwd", "secret", "passcode"}

// secretNumberName reports whether a number under the member name is a
// secret.
func secretNumberName(name string) bool {
	n := strings.ToLower(name)
	for _, c := range numericSecretNames {
		if strings.Contains(n, c) {
			return true
		}
	}
	return hasWord(name, "pin") || hasWord(name, "otp")
}

// hasWord reports whether w is one of the words of name, split at
// non-letters and at lower-to-upper case changes (camelCase).
func hasWord(name, w string) bool {
	start := 0
	for i, r := range name + "_" {
		boundary := !unicode.IsLetter(r) && !unicode.IsDigit(r)
		camel := i > 0 && unicode.IsUpper(r) && i < len(name) && unicode.IsLower(rune(name[i-1]))
		if boundary || camel {
			if strings.EqualFold(name[start:i], w) {
				return true
			}
			start = i
			if boundary {
				start = i + 1
			}
		}
	}
	return false
}

// scalar reports whether v is a JSON number, boolean, null or empty string:
// a credential name's value is replaced unless it is one ("max_tokens": 100
// stays).
func sensitiveName(k string) bool {
	for _, w := range credentialWords {
		if hasWord(k, w) {
			return true
		}
	}
	k = strings.ToLower(k)
	for _, n := range credentialNames {
		if strings.Contains(k, n) {
			return true
		}
	}
	return false
}

// Exporter returns a SpanExporter that redacts every span and hands it to
// next. Install it where the spans leave the process:
//
//	sdktrace.NewTracerProvider(sdktrace.WithBatcher(r.Exporter(otlpExporter)))
func (r *Redactor) Exporter(next sdktrace.SpanExporter) sdktrace.SpanExporter {
	return &exporter{r: r, next: next}
}

type exporter struct {
	r    *Redactor
	next sdktrace.SpanExporter
}

func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = e.r.Span(s)
	}
	return e.next.ExportSpans(ctx, out)
}

func (e *exporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// Processor returns a SpanProcessor that hands next a redacted view of
// every ended span (OnEnd). OnStart passes the live span through unchanged:
// a span's payload attributes are not final until it ends (ADK adds the
// tool response just before End), so next must not export from OnStart.
// Prefer Exporter when you control the exporter.
func (r *Redactor) Processor(next sdktrace.SpanProcessor) sdktrace.SpanProcessor {
	return &processor{r: r, next: next}
}

type processor struct {
	r    *Redactor
	next sdktrace.SpanProcessor
}

func (p *processor) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { p.next.OnStart(ctx, s) }
func (p *processor) OnEnd(s sdktrace.ReadOnlySpan)                         { p.next.OnEnd(p.r.Span(s)) }
func (p *processor) Shutdown(ctx context.Context) error                    { return p.next.Shutdown(ctx) }
func (p *processor) ForceFlush(ctx context.Context) error                  { return p.next.ForceFlush(ctx) }
