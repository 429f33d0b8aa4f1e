package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Classifier decides how a tool call's error counts for its dependency's
// breaker. Returning ok=false defers to the next classifier (a per-dependency
// override falls back to Classify).
type Classifier func(err error) (o registry.Outcome, ok bool)

// ErrNoResult marks a business "no result" outcome ("no such invoice", "no
// flights that day"): the dependency answered, so it is not a failure. Wrap
// it: fmt.Errorf("invoice %s: %w", id, callbacks.ErrNoResult).
var ErrNoResult = errors.New("no result")

// StatusError is an HTTP status failure of a dependency. Tools return it (or
// any error with a StatusCode() int method) so the classifier can tell 5xx and
// 429 (failures) from other 4xx (the caller's problem, excluded).
type StatusError struct {
	Code int
	// RetryAfter is the server's Retry-After, if it sent one.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return "dependency answered HTTP " + strconv.Itoa(e.Code) + " " + http.StatusText(e.Code)
}

// StatusCode returns e.Code.
func (e *StatusError) StatusCode() int { return e.Code }

// RetryAfterHint returns e.RetryAfter.
func (e *StatusError) RetryAfterHint() time.Duration { return e.RetryAfter }

// CheckResponse returns nil for a 2xx/3xx response and a *StatusError for
// anything else, with Retry-After parsed (seconds or HTTP date).
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode < 400 {
		return nil
	}
	return &StatusError{Code: resp.StatusCode, RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// ParseRetryAfter parses a Retry-After header value: delay-seconds or an
// HTTP date relative to now. Invalid or past values give 0; values are capped
// at one day.
func ParseRetryAfter(v string, now time.Time) time.Duration { return retryafter.Parse(v, now) }

type statusCoder interface{ StatusCode() int }

// mcpToolErrorPrefix is how ADK's mcptoolset reports an isError result: the
// server is alive and answered "no", so the dependency is healthy.
const mcpToolErrorPrefix = "Tool execution failed."

// panicPrefix is how ADK's functiontool reports a recovered panic.
const panicPrefix = "panic in tool "

// Classify is the default classifier. In order:
//   - nil → Success;
//   - an error implementing registry.OutcomeReporter decides for itself;
//   - tool.ErrConfirmationRequired/Rejected, ErrNoResult, context.Canceled,
//     argument decoding/validation errors → Excluded;
//   - context.DeadlineExceeded → Failure (the caller's own deadline is
//     excluded before Classify is consulted; see Handler);
//   - genai.APIError and StatusError-like errors: 429 and 5xx → Failure,
//     other 4xx → Excluded;
//   - transport errors (net.Error, connection refused/reset, EOF) → Failure;
//   - a recovered tool panic → Failure;
//   - ADK's MCP isError result ("Tool execution failed.") → Success;
//   - anything else → Failure.
func Classify(err error) registry.Outcome {
	if err == nil {
		return registry.Success
	}
	var rep registry.OutcomeReporter
	if errors.As(err, &rep) {
		return rep.BreakerOutcome()
	}
	switch {
	case errors.Is(err, tool.ErrConfirmationRequired), errors.Is(err, tool.ErrConfirmationRejected),
		errors.Is(err, ErrNoResult), errors.Is(err, context.Canceled):
		return registry.Excluded
	case errors.Is(err, context.DeadlineExceeded):
		return registry.Failure
	}
	var api genai.APIError // a value type: *genai.APIError never matches
	if errors.As(err, &api) && api.Code >= 400 {
		return statusOutcome(api.Code)
	}
	var sc statusCoder
	if errors.As(err, &sc) && sc.StatusCode() >= 400 {
		return statusOutcome(sc.StatusCode())
	}
	// A status below 400 (0: no response) says nothing; classify the cause.
	var ne net.Error
	if errors.As(err, &ne) {
		return registry.Failure
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return registry.Excluded
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return registry.Failure
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, panicPrefix):
		return registry.Failure
	case strings.HasPrefix(msg, mcpToolErrorPrefix) && errors.Unwrap(err) == nil:
		return registry.Success
	case isValidationMessage(msg):
		return registry.Excluded
	}
	return registry.Failure
}

// isValidationMessage recognises ADK functiontool's argument errors, which
// are untyped strings.
func isValidationMessage(msg string) bool {
	return strings.HasPrefix(msg, "unexpected args type") ||
		strings.HasPrefix(msg, "validating ") ||
		strings.Contains(msg, "validating root:") ||
		strings.HasPrefix(msg, "invalid argument")
}

func statusOutcome(code int) registry.Outcome {
	switch {
	case code == http.StatusTooManyRequests, code >= 500:
		return registry.Failure
	case code >= 400:
		return registry.Excluded
	}
	return registry.Success
}

// RetryHint extracts a server retry hint from err: a registry.RetryHinter,
// or the RetryInfo detail of a genai.APIError ("retryDelay": "7s").
func RetryHint(err error) time.Duration {
	if err == nil {
		return 0
	}
	var h registry.RetryHinter
	if errors.As(err, &h) {
		return h.RetryAfterHint()
	}
	var api genai.APIError
	if errors.As(err, &api) {
		return APIErrorRetryDelay(api)
	}
	return 0
}

// APIErrorRetryDelay returns the RetryInfo retryDelay of a Gemini API error,
// or 0. The delay is capped at one day (the registry then caps it at the
// dependency's MaxRetryHint): a huge delay ("10000000000s") is a long hint,
// never a negative or ignored one.
func APIErrorRetryDelay(api genai.APIError) time.Duration {
	for _, d := range api.Details {
		t, _ := d["@type"].(string)
		if !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		switch v := d["retryDelay"].(type) {
		case string:
			if dur := retryafter.Duration(v); dur > 0 {
				return dur
			}
		case map[string]any: // {"seconds": 7, "nanos": 0} in some encodings
			secs, _ := v["seconds"].(float64)
			nanos, _ := v["nanos"].(float64)
			if dur := retryafter.Seconds(secs + nanos/1e9); dur > 0 {
				return dur
			}
		}
	}
	return 0
}
