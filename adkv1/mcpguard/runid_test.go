package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/agent"
	adkplugin "google.golang.org/adk/plugin"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
)

// TestFailureLineNamesTheRun: the failure line an operator needs — which run, which
// server, which boundary, which limit — through the real runner: a call that
// times out is logged with the run's invocation ID.
func TestFailureLineNamesTheRun(t *testing.T) {
	fs := mcpfault.New(mcpfault.Config{})
	defer fs.Close()
	var logs logBuf
	reg := testRegistry(t)
	g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "pay", Dial: fs.Dial, CallTimeout: 100 * time.Millisecond}},
		mcpguard.WithLogger(newLogger(&logs)))
	defer g.Close()
	var inv string
	capture, err := adkplugin.New(adkplugin.Config{Name: "capture", BeforeRunCallback: func(ctx agent.InvocationContext) (*genai.Content, error) {
		inv = ctx.InvocationID()
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := discover(t, t.Context(), g, "warm"); err != nil { // list the tools before the server slows down
		t.Fatal(err)
	}
	fs.SetMode(mcpfault.SlowCall)
	runTurn(t, t.Context(), reg, g, &scriptedLLM{Call: "charge", Args: map[string]any{"amount": 1}}, capture)
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="mcpguard: operation failed"`) && strings.Contains(l, "boundary=call_tool") {
			line = l
		}
	}
	if line == "" || inv == "" {
		t.Fatalf("no call failure line (invocation %q):\n%s", inv, logs.String())
	}
	for _, want := range []string{"invocation_id=" + inv, "server=pay", "limit=call_timeout"} {
		if !strings.Contains(line, want) {
			t.Errorf("failure line lacks %s:\n%s", want, line)
		}
	}
}
