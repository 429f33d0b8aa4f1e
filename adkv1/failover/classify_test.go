package failover_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/failover"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("failed to call model: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want failover.Verdict
	}{
		{"nil", nil, failover.Verdict{Outcome: registry.Success}},
		{"503", wrap(apiErr(503, "UNAVAILABLE")), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError}},
		{"500 with retry", apiErr(500, "INTERNAL", retryInfo("2s")), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError, RetryAfter: 2 * time.Second}},
		{"429", wrap(apiErr(429, "RESOURCE_EXHAUSTED", retryInfo("7s"))), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonRateLimited, RetryAfter: 7 * time.Second}},
		{"429 per day", apiErr(429, "RESOURCE_EXHAUSTED", dailyQuota(), retryInfo("39s")), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonQuotaExhausted, RetryAfter: 39 * time.Second}},
		{"504", apiErr(504, "DEADLINE_EXCEEDED"), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonTimeout}},
		{"408", apiErr(408, "Request Timeout"), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonTimeout}},
		{"400", wrap(apiErr(400, "INVALID_ARGUMENT")), failover.Verdict{Outcome: registry.Excluded}},
		{"401", apiErr(401, "UNAUTHENTICATED"), failover.Verdict{Outcome: registry.Excluded}},
		{"403", apiErr(403, "PERMISSION_DENIED"), failover.Verdict{Outcome: registry.Excluded}},
		{"404", apiErr(404, "NOT_FOUND"), failover.Verdict{Outcome: registry.Excluded}},
		{"deadline", wrap(context.DeadlineExceeded), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonTimeout}},
		{"canceled", wrap(context.Canceled), failover.Verdict{Outcome: registry.Excluded}},
		{"prompt blocked", errors.New("empty response"), failover.Verdict{Outcome: registry.Success}},
		{"refused", wrap(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError}},
		{"eof", wrap(io.ErrUnexpectedEOF), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError}},
		{"unknown", errors.New("iterateResponseStream: invalid stream chunk"), failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError}},
		{"breaker refusal", &registry.OpenError{Key: "k"}, failover.Verdict{Outcome: registry.Excluded, Failover: true, Reason: failover.ReasonCircuitOpen}},
		{"nested chain, all skipped", &failover.Error{Model: "inner", Attempts: []failover.Attempt{{Reason: failover.ReasonCircuitOpen}}, RetryAfter: time.Second},
			failover.Verdict{Outcome: registry.Excluded, Failover: true, Reason: failover.ReasonCircuitOpen, RetryAfter: time.Second}},
		{"nested chain, failed", &failover.Error{Model: "inner", Attempts: []failover.Attempt{{Reason: failover.ReasonTimeout, Err: context.DeadlineExceeded}}},
			failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonTimeout}},
	} {
		if got := failover.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestIsDailyQuota(t *testing.T) {
	violation := func(k, v string) map[string]any {
		return map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{k: v}}}
	}
	for _, tc := range []struct {
		name string
		api  genai.APIError
		want bool
	}{
		{"quotaId PerDay", genai.APIError{Code: 429, Details: []map[string]any{dailyQuota(), retryInfo("39s")}}, true},
		{"metric per day", genai.APIError{Code: 429, Details: []map[string]any{violation("quotaMetric", "requests per day")}}, true},
		{"description per_day", genai.APIError{Code: 429, Details: []map[string]any{violation("description", "tokens_per_day limit")}}, true},
		{"per minute", genai.APIError{Code: 429, Details: []map[string]any{violation("quotaId", "GenerateRequestsPerMinutePerProjectPerModel"), retryInfo("20s")}}, false},
		{"errorinfo metadata", genai.APIError{Code: 429, Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "metadata": map[string]any{"quota_limit": "GenerateContentRequestsPerDayPerProject"}}}}, true},
		{"message, no RetryInfo", genai.APIError{Code: 429, Message: "Quota exceeded for quota metric 'Generate Content API requests per day'"}, true},
		{"message, with RetryInfo", genai.APIError{Code: 429, Message: "requests per day", Details: []map[string]any{retryInfo("5s")}}, false},
		{"not a word", genai.APIError{Code: 429, Message: "superday offer", Details: nil}, false},
		{"plain 429", genai.APIError{Code: 429, Message: "Resource has been exhausted"}, false},
	} {
		if got := failover.IsDailyQuota(tc.api); got != tc.want {
			t.Errorf("%s: IsDailyQuota = %v", tc.name, got)
		}
	}
}

func TestWithClassifierOverrides(t *testing.T) {
	// A classifier that treats 403 as an endpoint failure (a revoked key on
	// one endpoint) and defers the rest.
	c := func(err error) (failover.Verdict, bool) {
		var api genai.APIError
		if errors.As(err, &api) && api.Code == 403 {
			return failover.Verdict{Outcome: registry.Failure, Failover: true, Reason: failover.ReasonServerError}, true
		}
		return failover.Verdict{}, false
	}
	e := newEnv(t, testPolicy(), failover.WithClassifier(c))
	e.primary.setDefault(step{err: apiErr(403, "PERMISSION_DENIED")})
	if r := run(t.Context(), e.m, userReq("hi"), false); r.text() != "from fallback" {
		t.Errorf("text = %q, errs %v", r.text(), r.errs)
	}
}
