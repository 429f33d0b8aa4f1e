package spanredact_test

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/workflowagents/loopagent"

	"github.com/adkbreaker/adkbreaker/spanredact"
)

// TestRedactsWorkflowAgentSpans: the same turn run inside a loop agent;
// nothing leaks from any span of the trace, the loop's included. (ADK v2's
// graph workflows, with their own span name, are covered by
// TestRedactsGraphWorkflowSpans on that line.)
func TestRedactsWorkflowAgentSpans(t *testing.T) {
	checkWrapped(t, "invoke_agent loop", func(a agent.Agent) agent.Agent {
		loop, err := loopagent.New(loopagent.Config{MaxIterations: 1, AgentConfig: agent.Config{Name: "loop", SubAgents: []agent.Agent{a}}})
		if err != nil {
			t.Fatal(err)
		}
		return loop
	})
}

// checkWrapped runs adkTurn with the agent wrapped by wrap, checks the trace
// has a span named want, and that nothing leaks from any span once redacted.
func checkWrapped(t *testing.T, want string, wrap func(agent.Agent) agent.Agent) {
	t.Helper()
	spans := adkTurnWith(t, wrap)
	found := false
	for _, s := range spans {
		found = found || s.Name() == want
	}
	if !found {
		t.Fatalf("no %q span:\n%s", want, exported(spans))
	}
	red, err := spanredact.New()
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	if err := red.Exporter(exp).ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	if text := exported(exp.GetSpans().Snapshots()); len(leaks(text)) > 0 {
		t.Errorf("leaked %v\n%s", leaks(text), text)
	}
}
