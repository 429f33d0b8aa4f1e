package failover

import (
	"errors"
	"strings"

	"google.golang.org/genai"
)

// genaiLocalError reports whether err is genai refusing a request before
// sending it: a parameter the client's backend does not take ("labels
// parameter is only supported in Gemini Enterprise Agent Platform mode, not
// in Gemini Developer API mode."). genai raises these as plain errors while
// it converts the request; they say nothing about the endpoint's health.
// An error carrying a genai.APIError (the server's answer) never matches.
func genaiLocalError(err error) bool {
	var api genai.APIError
	if errors.As(err, &api) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, " parameter is only supported in ") && strings.Contains(msg, " mode, not in ")
}
