package failover

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/observe"
	"github.com/adkbreaker/adkbreaker/registry"
)

// ReasonStall: the endpoint accepted the call and then produced no content
// within its first-output deadline (Endpoint.FirstOutputTimeout), or no
// further content within its idle deadline (Endpoint.IdleTimeout). Before
// the first chunk the call fails over; after it, the call ends with a
// *StallError. Either way the stall is a failure of the endpoint.
const ReasonStall Reason = "stall"

// Stall deadline defaults (Endpoint.FirstOutputTimeout, IdleTimeout). They
// are set for reasoning models, which may think for minutes before their
// first content part when thought summaries are off, and whose unary answer
// is their first output; see docs/failover.md for the reasoning and for the
// values to choose for fast models.
const (
	// DefaultFirstOutputTimeout bounds the wait for the first content part
	// of a stream, or for a unary answer.
	DefaultFirstOutputTimeout = 5 * time.Minute
	// DefaultIdleTimeout bounds the wait between two content parts of a
	// stream.
	DefaultIdleTimeout = 90 * time.Second
)

// StallPhase says which stall deadline passed.
type StallPhase string

const (
	// StallFirstOutput: no content part arrived within the first-output
	// deadline (headers, keep-alives and content-less chunks do not count).
	StallFirstOutput StallPhase = "first_output"
	// StallIdle: no further content part arrived within the idle deadline
	// after the last one.
	StallIdle StallPhase = "idle"
)

// ErrStall matches (errors.Is) every *StallError. It is
// observe.ErrModelStall, so that the plugin (package callbacks, which this
// package imports) knows a model call that ended in a stall.
var ErrStall = observe.ErrModelStall

// StallError is the error of an endpoint call that stalled: the endpoint
// accepted the call and then produced no content part within a stall
// deadline. A stall before the first chunk fails over (the error is then in
// Error.Attempts); a stall after it ends the call with this error, which
// says how much had been streamed: the answer the caller holds is
// incomplete, never silently truncated.
//
// Its message is built from configuration and counts only.
type StallError struct {
	// Endpoint is the endpoint's key and Model its model name.
	Endpoint registry.Key
	Model    string
	// Phase is the deadline that passed, and Deadline its length.
	Phase    StallPhase
	Deadline time.Duration
	// Chunks is how many responses carrying content had been yielded to
	// the caller, Parts how many content parts they carried, and TextBytes
	// how many bytes of text (thoughts included). All zero for a stall
	// before the first chunk.
	Chunks, Parts, TextBytes int
}

// Error describes the stall and how much was streamed.
func (e *StallError) Error() string {
	var b strings.Builder
	b.WriteString("failover: model endpoint ")
	b.WriteString(string(e.Endpoint))
	b.WriteString(" stalled: ")
	switch e.Phase {
	case StallIdle:
		b.WriteString("no further content within ")
		b.WriteString(e.Deadline.String())
		b.WriteString(" after ")
		b.WriteString(strconv.Itoa(e.Chunks))
		b.WriteString(" chunks (")
		b.WriteString(strconv.Itoa(e.Parts))
		b.WriteString(" parts, ")
		b.WriteString(strconv.Itoa(e.TextBytes))
		b.WriteString(" bytes of text) had been streamed; the answer is incomplete")
	default:
		b.WriteString("no content within ")
		b.WriteString(e.Deadline.String())
	}
	return b.String()
}

// Is reports whether target is ErrStall.
func (e *StallError) Is(target error) bool { return target == ErrStall }

// stallCause is the cancellation cause of a stall deadline (errors.Is
// ErrStall).
type stallCause struct{ phase StallPhase }

func (c *stallCause) Error() string        { return "failover: endpoint stalled (" + string(c.phase) + ")" }
func (c *stallCause) Is(target error) bool { return target == ErrStall }

var (
	causeStallFirst = &stallCause{StallFirstOutput}
	causeStallIdle  = &stallCause{StallIdle}
)

// stallTimer is what the stall deadlines need of a timer (*time.Timer).
type stallTimer interface {
	Stop() bool
	Reset(time.Duration) bool
}

// afterFunc starts stall timers; tests replace it (export_test.go).
type afterFunc func(d time.Duration, f func()) stallTimer

func realAfterFunc(d time.Duration, f func()) stallTimer { return time.AfterFunc(d, f) }

// stallDeadlines resolves an endpoint's stall deadlines: 0 means the
// default, a negative value off (returned as 0).
func stallDeadlines(e *Endpoint) (first, idle time.Duration) {
	first, idle = e.FirstOutputTimeout, e.IdleTimeout
	if first == 0 {
		first = DefaultFirstOutputTimeout
	}
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return max(first, 0), max(idle, 0)
}

// stallWatch is one attempt's stall deadlines. The timer's function only
// marks the stall and cancels the attempt's context; everything else runs
// on the caller's goroutine, in handle.
type stallWatch struct {
	first, idle time.Duration
	timer       stallTimer
	fired       atomic.Bool
	idlePhase   atomic.Bool // the running timer is the idle deadline
	progressed  bool        // a content part arrived
	rearm       bool        // re-arm the idle deadline once the consumer returns
	counted     bool        // the stall was counted (metric, once)

	chunks, parts, text int
}

func (w *stallWatch) on() bool { return w.first > 0 || w.idle > 0 }

func (w *stallWatch) phase() StallPhase {
	if w.idlePhase.Load() {
		return StallIdle
	}
	return StallFirstOutput
}

func (w *stallWatch) deadline() time.Duration {
	if w.idlePhase.Load() {
		return w.idle
	}
	return w.first
}

// startStall arms the first-output deadline, if any. Called by attempt once
// the attempt's cancellable context exists.
func (cl *call) startStall() {
	w := &cl.stall
	if w.first > 0 {
		w.timer = cl.m.afterFunc(w.first, cl.stalled)
	}
}

// stopStall stops the running deadline; deferred by attempt.
func (cl *call) stopStall() {
	if t := cl.stall.timer; t != nil {
		t.Stop()
	}
}

// stalled runs on the timer's goroutine when a stall deadline passes.
func (cl *call) stalled() {
	w := &cl.stall
	if w.fired.CompareAndSwap(false, true) {
		if w.idlePhase.Load() {
			cl.cancel(causeStallIdle)
		} else {
			cl.cancel(causeStallFirst)
		}
	}
}

// stallError is the attempt's *StallError.
func (cl *call) stallError() error {
	w := &cl.stall
	if !w.counted {
		w.counted = true
		cl.m.countStall(cl.caller, cl.ep, w.phase())
	}
	return &StallError{
		Endpoint: cl.ep.Key, Model: cl.ep.ModelName, Phase: w.phase(), Deadline: w.deadline(),
		Chunks: w.chunks, Parts: w.parts, TextBytes: w.text,
	}
}

// stallItem watches one item before handle judges it: once a deadline has
// passed, whatever the endpoint yields (a chunk that came too late, the
// error of the cancelled request, or a "complete" answer aggregated from
// what had arrived) becomes the stall. A content part stops the running
// deadline; the idle deadline is armed again once the consumer has taken
// the item (rearmStall), so the consumer's own time never counts against
// the endpoint. Items without content (keep-alive chunks, usage only)
// leave the deadline running.
func (cl *call) stallItem(resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	w := &cl.stall
	if !w.on() || (resp == nil && err == nil) {
		return resp, err
	}
	if w.fired.Load() {
		return nil, cl.stallError()
	}
	if err != nil {
		if w.timer != nil {
			w.timer.Stop()
		}
		return resp, err
	}
	parts, text := contentOf(resp)
	if parts == 0 && resp.Partial {
		return resp, nil
	}
	if w.timer != nil && !w.timer.Stop() && (w.idlePhase.Load() || !w.progressed) {
		// The deadline passed while this item was on its way.
		cl.stalled() // finish what the timer started: mark it and cancel
		return nil, cl.stallError()
	}
	w.progressed = true
	w.chunks++
	w.parts += parts
	w.text += text
	w.rearm = w.idle > 0
	cl.probeProgressed()
	return resp, nil
}

// rearmStall arms the idle deadline after the consumer took a content item.
func (cl *call) rearmStall() {
	w := &cl.stall
	if !w.rearm {
		return
	}
	w.rearm = false
	w.idlePhase.Store(true)
	if w.timer == nil {
		w.timer = cl.m.afterFunc(w.idle, cl.stalled)
		return
	}
	w.timer.Reset(w.idle)
}

// contentOf counts the content parts of resp (text, thoughts, function
// calls and responses, data, code) and their text bytes. A thought part is
// progress: a reasoning model streaming its thoughts is not stalled.
func contentOf(resp *model.LLMResponse) (parts, text int) {
	if resp == nil || resp.Content == nil {
		return 0, 0
	}
	for _, p := range resp.Content.Parts {
		if p == nil {
			continue
		}
		if p.Text != "" || p.Thought || len(p.ThoughtSignature) > 0 || p.FunctionCall != nil || p.FunctionResponse != nil ||
			p.InlineData != nil || p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil {
			parts++
			text += len(p.Text)
		}
	}
	return parts, text
}

// ourCut returns the error for an endpoint call that returned without an
// error after our own deadline (Timeout or a stall deadline) had cancelled
// it, or nil. genai ends a stream silently when its body read fails, and
// model/gemini then yields what it had aggregated as a complete answer:
// without this the caller would take a cut stream for a whole one.
func (cl *call) ourCut() error {
	if cl.stopped || cl.reported || cl.actx == cl.caller {
		return nil
	}
	if cl.stall.fired.Load() {
		return cl.stallError()
	}
	if context.Cause(cl.actx) == errTimeout {
		return errTimeout
	}
	return nil
}

// MetricStalls is the counter of stalled endpoint calls (recorded with
// WithMeterProvider). Attributes: model, endpoint and phase
// ("first_output" or "idle").
const MetricStalls = "adkbreaker.model.stalls"

func newStallCounter(mp metric.MeterProvider) (metric.Int64Counter, error) {
	c, err := mp.Meter(ScopeName).Int64Counter(MetricStalls,
		metric.WithUnit("{call}"),
		metric.WithDescription("Model endpoint calls that produced no content within the endpoint's first-output or idle deadline."))
	if err != nil {
		return nil, fmt.Errorf("meter provider: %w", err)
	}
	return c, nil
}

func (m *Model) countStall(ctx context.Context, ep *endpoint, phase StallPhase) {
	if m.stalls != nil {
		m.stalls.Add(ctx, 1, metric.WithAttributes(
			attribute.String("model", m.name), attribute.String("endpoint", string(ep.Key)), attribute.String("phase", string(phase))))
	}
	if phase == StallIdle {
		return // the mid-stream log line says it
	}
	if ok, suppressed := m.logs.Allow(limKey{a: string(ep.Key), r: "stall"}.String(), m.clock.Now()); ok {
		m.log.LogAttrs(ctx, slog.LevelWarn, "adkbreaker: model endpoint stalled before its first content",
			slog.String("model", m.name), slog.String("endpoint", string(ep.Key)),
			slog.String("reason", string(ReasonStall)), slog.String("phase", string(phase)),
			slog.Int("suppressed", suppressed))
	}
}
