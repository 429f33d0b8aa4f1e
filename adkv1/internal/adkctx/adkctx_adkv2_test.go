//go:build ignore

package adkctx

import "testing"

type plainTool struct{ x int }
type otherTool struct{ y int }

// TestFrameworkToolOthers: nil and tools of other types are not framework
// tools, also when asked again (the remembered answer). ADK's own tools are
// recognised in the breaker package's tests, on the real runner
// (TestFrameworkToolsOnlyByExactName, TestGuardMatrix's task and single
// shapes): their types are internal to ADK.
func TestFrameworkToolOthers(t *testing.T) {
	for range 2 {
		for _, v := range []any{nil, &plainTool{}, plainTool{}, &otherTool{}, "finish_task"} {
			if FrameworkTool(v) {
				t.Fatalf("FrameworkTool(%T) = true", v)
			}
		}
	}
}

// BenchmarkFrameworkTool is the check on every tool call: a few remembered
// types compared by their type word (7–8 ns here; 14–15 ns comparing
// reflect.Type values).
func BenchmarkFrameworkTool(b *testing.B) {
	vs := []any{&plainTool{}, &otherTool{}, &plainTool{}}
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		if FrameworkTool(vs[i%3]) {
			n++
		}
	}
	_ = n
}
