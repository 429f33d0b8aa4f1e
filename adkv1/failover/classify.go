package failover

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Reason is why a call left an endpoint. The set is closed.
type Reason string

const (
	// ReasonCircuitOpen: the endpoint's breaker refused the call (open,
	// half-open with its probe slot taken, or isolated by an operator).
	ReasonCircuitOpen Reason = "circuit_open"
	// ReasonServerError: 5xx, a transport error, or a malformed answer.
	ReasonServerError Reason = "server_error"
	// ReasonRateLimited: 429 (or the endpoint is held after one that carried
	// a retry hint).
	ReasonRateLimited Reason = "rate_limited"
	// ReasonTimeout: the endpoint's Timeout expired, or it answered 408/504.
	ReasonTimeout Reason = "timeout"
	// ReasonQuotaExhausted: 429 for a per-day quota; the endpoint is held
	// until the quota resets.
	ReasonQuotaExhausted Reason = "quota_exhausted"
	// ReasonThrottled: the endpoint's adaptive throttle sent the call
	// straight to the next endpoint (Endpoint.Throttle); the endpoint was
	// not called, and its breaker counted nothing.
	ReasonThrottled Reason = "throttled"
)

// boxed returns r as an interface value holding a plain string, without
// allocating (constant conversions are static).
func (r Reason) boxed() any {
	switch r {
	case ReasonCircuitOpen:
		return string(ReasonCircuitOpen)
	case ReasonServerError:
		return string(ReasonServerError)
	case ReasonRateLimited:
		return string(ReasonRateLimited)
	case ReasonTimeout:
		return string(ReasonTimeout)
	case ReasonQuotaExhausted:
		return string(ReasonQuotaExhausted)
	case ReasonThrottled:
		return string(ReasonThrottled)
	}
	return string(r)
}

// closed returns r if it is one of the Reason constants, and "other" for
// anything else a Classifier may have returned: text that reaches a
// caller's error message comes from a closed set only.
func (r Reason) closed() string {
	switch r {
	case ReasonCircuitOpen, ReasonServerError, ReasonRateLimited, ReasonTimeout, ReasonQuotaExhausted, ReasonThrottled,
		ReasonStall:
		return string(r)
	}
	return "other"
}

// Verdict is how an endpoint's error counts for its breaker, and whether the
// call moves on to the next endpoint.
type Verdict struct {
	// Outcome is reported to the endpoint's breaker.
	Outcome registry.Outcome
	// Failover says the next endpoint may succeed where this one failed.
	// It only applies before the endpoint yielded anything.
	Failover bool
	// Reason is why (meaningful when Failover or Outcome is Failure).
	Reason Reason
	// RetryAfter is the server's retry hint (RetryInfo.retryDelay, or the
	// Retry-After header captured by RetryAfterTransport). It becomes a
	// floor for the breaker's open hold; whether it opens the breaker is the
	// policy's TripOnRetryHint and RetryHintFailures (for a 429, the
	// exhaustion check: see DefaultPolicy).
	RetryAfter time.Duration
}

// Classifier overrides classification: ok=false defers to Classify.
type Classifier func(err error) (v Verdict, ok bool)

// Classify is the default, Gemini-aware classification of an endpoint's
// error. The Model decides two cases before it: the caller's cancellation or
// deadline (Excluded, no failover) and the endpoint's own Timeout (Failure,
// failover, timeout). Then:
//
//	429 with a per-day QuotaFailure     Failure   failover  quota_exhausted (held until the reset)
//	429                                 Failure   failover  rate_limited    (RetryInfo → hint)
//	408, 504, context.DeadlineExceeded  Failure   failover  timeout
//	5xx                                 Failure   failover  server_error
//	transport error, malformed answer   Failure   failover  server_error
//	400, 404, other 4xx                 Excluded  no        (the request, not the endpoint; another endpoint would fail alike)
//	refused by the client before sending Excluded  no        (genai: a parameter its backend does not take; ADK v2's OpenAI model: TopK, …)
//	"empty response" (prompt blocked)   Success   no        (the endpoint answered)
//	context.Canceled                    Excluded  no
//	*Error of a nested failover Model   as its attempts: all skipped → Excluded + failover (circuit_open)
//
// Safety blocks that arrive as responses (FinishReason SAFETY, prompt
// feedback) are not errors: they are passed through and count as successes.
func Classify(err error) Verdict {
	if err == nil {
		return Verdict{Outcome: registry.Success}
	}
	var fe *Error
	if errors.As(err, &fe) {
		if fe.allSkipped() {
			return Verdict{Outcome: registry.Excluded, Failover: true, Reason: ReasonCircuitOpen, RetryAfter: fe.RetryAfter}
		}
		r := ReasonServerError
		if n := len(fe.Attempts); n > 0 {
			r = fe.Attempts[n-1].Reason
		}
		return Verdict{Outcome: registry.Failure, Failover: true, Reason: r}
	}
	if errors.Is(err, registry.ErrOpen) {
		return Verdict{Outcome: registry.Excluded, Failover: true, Reason: ReasonCircuitOpen}
	}
	if v, ok := providerVerdict(err); ok {
		return v
	}
	var api genai.APIError // a value type: *genai.APIError never matches
	if errors.As(err, &api) {
		return apiVerdict(api)
	}
	if genaiLocalError(err) {
		return Verdict{Outcome: registry.Excluded} // refused before sending (localerr.go)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonTimeout}
	case errors.Is(err, context.Canceled):
		return Verdict{Outcome: registry.Excluded}
	case errors.Unwrap(err) == nil && err.Error() == "empty response":
		// model/gemini: a 200 with no candidate, which is how a prompt
		// blocked by safety filters arrives in unary mode.
		return Verdict{Outcome: registry.Success}
	}
	switch callbacks.Classify(err) {
	case registry.Success:
		return Verdict{Outcome: registry.Success}
	case registry.Excluded:
		return Verdict{Outcome: registry.Excluded}
	}
	return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonServerError, RetryAfter: callbacks.RetryHint(err)}
}

func apiVerdict(api genai.APIError) Verdict {
	delay := callbacks.APIErrorRetryDelay(api)
	switch c := api.Code; {
	case c == http.StatusTooManyRequests:
		if IsDailyQuota(api) {
			return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonQuotaExhausted, RetryAfter: delay}
		}
		return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonRateLimited, RetryAfter: delay}
	case c == http.StatusRequestTimeout, c == http.StatusGatewayTimeout:
		return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonTimeout, RetryAfter: delay}
	case c >= 500:
		return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonServerError, RetryAfter: delay}
	case c >= 400:
		return Verdict{Outcome: registry.Excluded}
	}
	return Verdict{Outcome: registry.Failure, Failover: true, Reason: ReasonServerError, RetryAfter: delay}
}

// perDay matches "per day", "per_day", "per-day" and "perday" as words
// (case-insensitive); camel case ("RequestsPerDay") is checked separately.
var perDay = regexp.MustCompile(`(?i)(^|[^a-z])per[ _-]?day`)

func mentionsPerDay(s string) bool {
	return strings.Contains(s, "PerDay") || perDay.MatchString(s)
}

// IsDailyQuota reports whether a Gemini API error is a per-day quota
// exhaustion: a google.rpc.QuotaFailure detail whose violation names a
// per-day quota (quotaId "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
// a quotaMetric or description saying "per day"), an ErrorInfo whose
// metadata does, or — with no RetryInfo to go by — a message that does.
// Gemini sends a RetryInfo of seconds even for a daily quota, so a per-day
// violation wins over the retry delay.
func IsDailyQuota(api genai.APIError) bool {
	hasRetry := false
	for _, d := range api.Details {
		t, _ := d["@type"].(string)
		switch {
		case strings.HasSuffix(t, "google.rpc.QuotaFailure"):
			vs, _ := d["violations"].([]any)
			for _, v := range vs {
				vm, _ := v.(map[string]any)
				for _, k := range [...]string{"quotaId", "quotaMetric", "description", "subject"} {
					if s, ok := vm[k].(string); ok && mentionsPerDay(s) {
						return true
					}
				}
			}
		case strings.HasSuffix(t, "google.rpc.ErrorInfo"):
			md, _ := d["metadata"].(map[string]any)
			for _, v := range md {
				if s, ok := v.(string); ok && mentionsPerDay(s) {
					return true
				}
			}
		case strings.HasSuffix(t, "google.rpc.RetryInfo"):
			hasRetry = true
		}
	}
	return !hasRetry && mentionsPerDay(api.Message)
}
