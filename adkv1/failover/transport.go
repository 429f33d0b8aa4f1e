package failover

import (
	"net/http"

	"github.com/adkbreaker/adkbreaker/internal/retryafter"
)

// RetryAfterTransport returns an http.RoundTripper that records the
// Retry-After header of error responses (status ≥ 400) for the failover
// Model, which reads it after the endpoint's call failed and uses it as a
// cool-down floor, like Gemini's RetryInfo. genai.APIError carries no
// headers, so this is the only way to see Retry-After through the genai
// client: install it as the client's transport,
//
//	&genai.ClientConfig{HTTPClient: &http.Client{Transport: failover.RetryAfterTransport(nil)}, …}
//
// (FromConfig does). Requests made outside a failover Model's call pass
// through untouched. A nil base means http.DefaultTransport.
func RetryAfterTransport(base http.RoundTripper) http.RoundTripper { return retryafter.Transport(base) }
