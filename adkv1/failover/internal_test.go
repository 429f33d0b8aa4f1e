package failover

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/internal/retryafter"
	"github.com/adkbreaker/adkbreaker/registry"
)

func TestBuildGeminiRedactsTheKey(t *testing.T) {
	t.Setenv("SECRET_KEY", "sk-very-secret")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "")
	// Configuration validation rejects this combination, and so does every
	// genai version (an API key with a location on the Gemini API);
	// buildGemini must not leak the key when genai formats its config into
	// the error.
	_, err := buildGemini(context.Background(), config.ModelEndpoint{
		Model: "m", Backend: config.BackendGeminiAPI, Location: "europe-west4", APIKeyEnv: "SECRET_KEY",
	}, http.DefaultTransport)
	if err == nil {
		t.Fatal("want genai's error")
	}
	if strings.Contains(err.Error(), "sk-very-secret") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error = %v", err)
	}
}

func TestNewCallClones(t *testing.T) {
	hdr := http.Header{"X-A": {"1"}}
	small := []*genai.Content{genai.NewContentFromText("a", genai.RoleUser)}
	req := &model.LLMRequest{Model: "outer", Contents: small,
		Config: &genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: hdr}}}
	cl := newCall(context.Background(), req, "inner")
	if cl.req.Model != "inner" || req.Model != "outer" {
		t.Errorf("model %q / %q", cl.req.Model, req.Model)
	}
	cl.req.Contents = append(cl.req.Contents, genai.NewContentFromText("b", genai.RoleUser))
	cl.req.Contents[0] = nil
	cl.req.Config.HTTPOptions.Headers.Set("X-B", "2")
	cl.req.Config.Temperature = genai.Ptr[float32](1)
	if small[0] == nil || len(req.Contents) != 1 || hdr.Get("X-B") != "" || req.Config.Temperature != nil {
		t.Error("the clone shares state with the caller's request")
	}
	big := make([]*genai.Content, 20)
	cl = newCall(context.Background(), &model.LLMRequest{Contents: big}, "m")
	cl.req.Contents[0] = genai.NewContentFromText("x", genai.RoleUser)
	if big[0] != nil || len(cl.req.Contents) != 20 {
		t.Error("large contents not copied")
	}
	if newCall(context.Background(), &model.LLMRequest{}, "m").req.Config != nil {
		t.Error("a nil config must stay nil")
	}
	// The attempt context carries the Retry-After holder and nothing else
	// changes.
	type k struct{}
	ctx := context.WithValue(context.Background(), k{}, "v")
	cl = newCall(ctx, req, "m")
	if cl.ctx.Value(k{}) != "v" || cl.ctx.Value(retryafter.HolderKey{}) != &cl.hint {
		t.Error("attempt context values")
	}
}

func TestUntilMidnight(t *testing.T) {
	now := time.Date(2026, 3, 1, 20, 30, 0, 0, time.UTC)
	if d := untilMidnight(now, time.UTC); d != 3*time.Hour+30*time.Minute {
		t.Errorf("UTC: %s", d)
	}
	pst := time.FixedZone("PST", -8*3600)
	if d := untilMidnight(now, pst); d != 11*time.Hour+30*time.Minute {
		t.Errorf("PST: %s", d) // 12:30 PST
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(10 * time.Second)
	t0 := time.Unix(0, 0)
	k := limKey{a: "x"}
	for i, tc := range []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{{0, true, 0}, {time.Second, false, 0}, {9 * time.Second, false, 0}, {10 * time.Second, true, 2}, {11 * time.Second, false, 0}} {
		ok, n := l.Allow(k.String(), t0.Add(tc.at))
		if ok != tc.ok || n != tc.suppressed {
			t.Errorf("%d: allow = %v, %d", i, ok, n)
		}
	}
	if ok, _ := l.Allow(limKey{a: "y"}.String(), t0.Add(time.Second)); !ok {
		t.Error("keys are limited together")
	}
}

// TestProbeWaitNeverZero: a probe past its deadline whose cut has not
// landed yet is still waited for (at least registry.MinProbeRetryAfter, or
// the breaker's own wait if shorter), never 0; before its deadline the wait
// is capped by what is left of it.
func TestProbeWaitNeverZero(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := registry.ClockFunc(func() time.Time { return now })
	ep := &endpoint{}
	ep.probeDue.Store(now.Add(-time.Second).UnixNano()) // the deadline passed
	if got := ep.probeWait(clk, 5*time.Minute); got != registry.MinProbeRetryAfter {
		t.Errorf("past the deadline: wait %s, want %s", got, registry.MinProbeRetryAfter)
	}
	if got := ep.probeWait(clk, 300*time.Millisecond); got != 300*time.Millisecond {
		t.Errorf("past the deadline, breaker's wait 300ms: wait %s, want 300ms", got)
	}
	ep.probeDue.Store(now.Add(10 * time.Second).UnixNano())
	if got := ep.probeWait(clk, 5*time.Minute); got != 10*time.Second {
		t.Errorf("10s before the deadline: wait %s, want 10s", got)
	}
	if got := ep.probeWait(clk, 2*time.Second); got != 2*time.Second {
		t.Errorf("breaker's wait 2s, 10s before the deadline: wait %s, want 2s", got)
	}
}
