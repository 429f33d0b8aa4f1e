package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/callbacks"
)

func ExampleClassify() {
	for _, err := range []error{
		nil,
		&callbacks.StatusError{Code: 503},
		&callbacks.StatusError{Code: 429, RetryAfter: 7 * time.Second},
		&callbacks.StatusError{Code: 404},
		genai.APIError{Code: 500, Status: "INTERNAL"},
		&net.OpError{Op: "dial", Err: errors.New("connection refused")},
		context.DeadlineExceeded,
		context.Canceled,
		fmt.Errorf("invoice 42: %w", callbacks.ErrNoResult),
		fmt.Errorf("tool %q: %w", "pay", tool.ErrConfirmationRequired),
	} {
		fmt.Printf("%-45v %s\n", err, callbacks.Classify(err))
	}
	// Output:
	// <nil>                                         success
	// dependency answered HTTP 503 Service Unavailable failure
	// dependency answered HTTP 429 Too Many Requests failure
	// dependency answered HTTP 404 Not Found        excluded
	// Error 500, Message: , Status: INTERNAL, Details: [] failure
	// dial: connection refused                      failure
	// context deadline exceeded                     failure
	// context canceled                              excluded
	// invoice 42: no result                         excluded
	// tool "pay": requires confirmation, please approve or reject excluded
}

func ExampleRetryHint() {
	apiErr := genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"},
	}}
	fmt.Println(callbacks.RetryHint(fmt.Errorf("failed to call model: %w", apiErr)))
	fmt.Println(callbacks.RetryHint(&callbacks.StatusError{Code: 503, RetryAfter: 2 * time.Minute}))
	// Output:
	// 30s
	// 2m0s
}
