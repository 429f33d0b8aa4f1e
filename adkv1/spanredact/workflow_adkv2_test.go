//go:build ignore

package spanredact_test

import (
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/workflow"
)

// TestRedactsGraphWorkflowSpans: ADK v2's graph workflow agents record an
// "invoke_workflow {name}" span (where other agents have "invoke_agent");
// redaction covers it like any other span.
func TestRedactsGraphWorkflowSpans(t *testing.T) {
	checkWrapped(t, "invoke_workflow wf", func(a agent.Agent) agent.Agent {
		node, err := workflow.NewAgentNode(a, workflow.NodeConfig{})
		if err != nil {
			t.Fatal(err)
		}
		wf, err := workflowagent.New(workflowagent.Config{Name: "wf", Edges: workflow.Chain(workflow.Start, node)})
		if err != nil {
			t.Fatal(err)
		}
		return wf
	})
}
