package browsertest

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestSkipSaysSo: a test skipped for a missing tool writes one line naming
// the test, its package and the tool, where a non-verbose `go test` cannot
// hide it.
func TestSkipSaysSo(t *testing.T) {
	var buf bytes.Buffer
	prev := skipOut
	skipOut = func() (io.Writer, func()) { return &buf, func() {} }
	t.Cleanup(func() { skipOut = prev })
	t.Setenv("CI", "")
	var skipped bool
	t.Run("needs_tool", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		RequireTool(t, "no-such-package", "no-such-tool-adkbreaker")
		t.Error("RequireTool returned for a tool that is not installed")
	})
	if !skipped {
		t.Fatal("the test was not skipped")
	}
	want := "adkbreaker: skipped TestSkipSaysSo/needs_tool (browsertest): no-such-tool-adkbreaker not installed (apt-get install no-such-package); CI installs it\n"
	if got := buf.String(); got != want {
		t.Errorf("skip line = %q, want %q", got, want)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("want one line, got %q", buf.String())
	}
}
