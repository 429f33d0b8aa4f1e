package mcpguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLogCauseIsRedacted: the cause a failure line carries is the server's
// error without its credentials — a header value echoed across the cut at
// the log's limit, a key in a URL — as the span's cause is.
func TestLogCauseIsRedacted(t *testing.T) {
	const header = "s3cr3t-raw-0123456789"
	pad := strings.Repeat("a ", (maxLogPayload-10)/2) // the header value straddles the cut
	cause := errors.New(pad + header + ` POST "https://mcp.example/rpc?api_key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q": refused`)
	s := &server{cfg: Server{Name: "notes"}, secrets: []string{header}}
	o := &op{s: s, operation: BoundaryCallTool}
	attrs := s.logAttrs(o, &Error{Boundary: BoundaryCallTool, Cause: cause, payload: "echo " + header})
	line := fmt.Sprint(attrs...)
	for _, leak := range []string{header, header[:10], "AIzaSy", "api_key=AIza"} {
		if strings.Contains(line, leak) {
			t.Errorf("the failure line carries %q:\n%s", leak, line)
		}
	}
	if !strings.Contains(line, "cause") {
		t.Fatalf("no cause in %s", line)
	}
}
