package failover

import (
	"net/http"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
)

// RetryAfterTransport returns an http.RoundTripper that records the retry
// hint of error responses (status ≥ 400) — Retry-After-Ms, else
// Retry-After — for the failover Model, which reads it after the
// endpoint's call failed and uses it as a cool-down floor, like Gemini's
// RetryInfo. genai.APIError carries no headers, so this is the only way to
// see Retry-After through the genai client: install it as the client's
// transport,
//
//	&genai.ClientConfig{HTTPClient: &http.Client{Transport: failover.RetryAfterTransport(nil)}, …}
//
// (FromConfig does; for ADK v2's OpenAI model, openaimodel.ClientConfig's
// HTTPClient). It follows every HTTP attempt of a call and keeps the last
// response (its status, its hint, when it arrived), so a hint survives a
// client's own retries: a call the endpoint's Timeout or stall deadline
// cuts while the client sleeps out a hinted 429 (openai-go's default
// retries) — the 429 is the last response, its hint has not passed, and
// no retry has been sent — counts as that 429, rate_limited with its hint,
// not as a timeout. A cut after the retry went out is a timeout (or stall),
// and a later answer replaces the 429 and its hint. Requests made outside a
// failover Model's call pass through untouched. A nil base means
// http.DefaultTransport.
func RetryAfterTransport(base http.RoundTripper) http.RoundTripper { return retryafter.Transport(base) }
