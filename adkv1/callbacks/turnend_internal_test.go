package callbacks

import (
	"testing"

	"google.golang.org/adk/agent"
)

// readerCtx is the agent and branch turnEnds reads of a model call.
type readerCtx struct {
	agent.ReadonlyContext
	name, branch string
}

func (c readerCtx) AgentName() string { return c.name }
func (c readerCtx) Branch() string    { return c.branch }

// TestTurnEndWholeRunAnswerReplacesBranchAnswer: an agent that read its
// branch's end (the repeated-call guard ended a ParallelAgent branch) reads
// the whole run's final answer once the run ended with another (a model-call
// budget spent), not its branch's answer again. Before, it was served the
// branch's answer for every later read.
func TestTurnEndWholeRunAnswerReplacesBranchAnswer(t *testing.T) {
	var e turnEnds
	a := readerCtx{name: "worker", branch: "root.worker"}
	b := readerCtx{name: "other", branch: "root.other"}
	text := func(t *testing.T, ctx readerCtx) string {
		t.Helper()
		resp, err, done := e.check(ctx, "run")
		if !done || err != nil || resp == nil {
			t.Fatalf("check(%s) = %v, %v, %v; want a final answer", ctx.name, resp, err, done)
		}
		return resp.Content.Parts[0].Text
	}
	e.end(a, runKey{Run: "run", Branch: a.branch}, false, finalResponse("branch ended", "repeated_call"))
	if got := text(t, a); got != "branch ended" {
		t.Fatalf("the branch's agent reads %q, want its branch's answer", got)
	}
	if _, _, done := e.check(b, "run"); done {
		t.Fatal("a sibling branch was answered: only its branch ended")
	}
	e.end(b, runKey{Run: "run", Branch: b.branch}, true, finalResponse("budget spent", "model_budget"))
	for _, ctx := range []readerCtx{a, b, a} {
		if got := text(t, ctx); got != "budget spent" {
			t.Fatalf("%s reads %q after the whole run ended, want the run's answer", ctx.name, got)
		}
	}
	// The reads of both answers count together towards maxFinalReads.
	for range maxFinalReads - 4 {
		text(t, a)
	}
	if _, err, done := e.check(a, "run"); !done || err != ErrTurnEnded {
		t.Fatalf("read %d: %v, %v; want ErrTurnEnded", maxFinalReads+1, err, done)
	}
}
