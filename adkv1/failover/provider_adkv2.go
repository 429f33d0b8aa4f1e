//go:build ignore

package failover

import (
	"errors"
	"net/http"
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
		v.RetryAfter = retryafter.FromHeader(hdr, time.Now()) // Retry-After-Ms, else Retry-After
	}
	return v, true
}
