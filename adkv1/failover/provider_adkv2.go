//go:build ignore

package failover

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
	"github.com/adkbreaker/adkbreaker/registry"
)

// openAILocal are model/openaimodel's errors for a request it refuses to
// build: it returns them before sending anything.
var openAILocal = []error{
	openaimodel.ErrRequestNil, openaimodel.ErrNoContents, openaimodel.ErrFunctionCallMissingName,
	openaimodel.ErrTopKNotSupported, openaimodel.ErrStopSequencesNotSupported,
	openaimodel.ErrMultipleCandidatesNotSupported, openaimodel.ErrPenaltiesNotSupported,
	openaimodel.ErrLabelsNotSupported, openaimodel.ErrSafetySettingsNotSupported,
	openaimodel.ErrUnsupportedMIMEType, openaimodel.ErrEmptyJSONSchema,
}

func localRequestError(err error) bool {
	for _, l := range openAILocal {
		if errors.Is(err, l) {
			return true
		}
	}
	return false
}

// providerVerdict classifies errors of model providers other than Gemini
// that the ADK line ships. ADK v2's model/openaimodel wraps openai-go's
// *openai.Error, which carries the HTTP status and response: it is
// classified by status exactly as a Gemini APIError is (429 rate_limited,
// 408/504 timeout, 5xx server_error, other 4xx excluded), and the
// response's Retry-After-Ms or Retry-After header is the retry hint. The
// error's text (it quotes the request URL and the response body) is never
// read.
func providerVerdict(err error) (Verdict, bool) {
	if localRequestError(err) {
		// model/openaimodel refused the request before sending it (TopK,
		// stop sequences, …): the request's problem, not the endpoint's,
		// and charged to no one, as a 400 would be.
		return Verdict{Outcome: registry.Excluded}, true
	}
	var oe *openai.Error
	if !errors.As(err, &oe) || oe == nil {
		return Verdict{}, false
	}
	code := oe.StatusCode
	var hdr http.Header
	if oe.Response != nil {
		code, hdr = oe.Response.StatusCode, oe.Response.Header
	}
	v := apiVerdict(genai.APIError{Code: code})
	if v.RetryAfter == 0 {
		v.RetryAfter = openAIRetryAfter(hdr, time.Now())
	}
	return v, true
}

// openAIRetryAfter reads the retry hint the way openai-go's own retries do:
// Retry-After-Ms (milliseconds) first, then Retry-After (seconds or an
// HTTP date).
func openAIRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n > 0 {
			return retryafter.Seconds(n / 1000)
		}
	}
	if ra := h.Get("Retry-After"); ra != "" {
		return retryafter.Parse(ra, now)
	}
	return 0
}
