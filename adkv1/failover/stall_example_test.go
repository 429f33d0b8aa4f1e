package failover_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

// A stream that falls silent after its first chunks ends with a
// *failover.StallError once the endpoint's idle deadline passes: the caller
// learns how much it got, instead of taking a cut answer for a whole one.
// A primary silent from the start would fail over at its first-output
// deadline instead.
func ExampleStallError() {
	primary := &streamLLM{chunks: []string{"The answer is", " forty"}} // then nothing
	key := failover.EndpointKey("gemini-2.5-pro", "gemini_api", "")
	reg := registry.MustNew(failover.PolicyOptions(key)...)
	m := failover.MustNew("assistant", reg, []failover.Endpoint{{
		LLM: primary, Key: key,
		FirstOutputTimeout: 30 * time.Second,      // to the first content part (thoughts count)
		IdleTimeout:        20 * time.Millisecond, // between content parts
	}}, failover.WithLogger(slog.New(slog.DiscardHandler)))
	defer m.Close()

	for resp, err := range m.GenerateContent(context.Background(), userReq("hi"), true) {
		if err != nil {
			var se *failover.StallError
			if errors.As(err, &se) {
				fmt.Printf("stalled (%s) after %d chunks, %d bytes of text\n", se.Phase, se.Chunks, se.TextBytes)
			}
			break
		}
		fmt.Printf("chunk %q\n", resp.Content.Parts[0].Text)
	}
	// Output:
	// chunk "The answer is"
	// chunk " forty"
	// stalled (idle) after 2 chunks, 19 bytes of text
}
