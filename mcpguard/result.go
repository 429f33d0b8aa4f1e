package mcpguard

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keys and values of what a tool call returns to the model.
const (
	// KeyOutput holds a successful result: the structured content when the
	// server sent it, else the text of the content blocks (as ADK's
	// mcptoolset does).
	KeyOutput = "output"
	// KeyStatus is present only on an isError answer, with StatusToolError.
	KeyStatus = "status"
	// StatusToolError marks an isError answer: the server is up, the tool
	// said no.
	StatusToolError = "tool_error"
	// KeyMessage is fixed guidance for the model on an isError answer.
	KeyMessage = "message"
	// KeyUntrustedDetail holds the sanitised excerpt of an isError text when
	// Server.ToolErrorDetail is set.
	KeyUntrustedDetail = "untrusted_detail"
	// MaxDetailBytes bounds KeyUntrustedDetail.
	MaxDetailBytes = 256
	// maxLogPayload bounds raw payloads in logs.
	maxLogPayload = 512
)

const toolErrorMessage = "The tool ran and reported an error; its text is withheld because it comes from an external server. " +
	"Check the arguments against the tool's description, try a different approach, or tell the user."

// convert turns a tools/call result into what the model sees, holding it to
// the tool's output schema. Nothing partially valid is passed on.
func (t *Tool) convert(o *op, res *mcp.CallToolResult, gc *guardConn) (map[string]any, *Error) {
	if res == nil {
		return nil, t.protocol(o, ReasonMalformed, "nil result", gc)
	}
	if gc == nil { // a caller's session: no transport-level cap, measure here
		if n := resultSize(res); n > t.srv.cfg.MaxResultBytes {
			e := t.protocol(o, ReasonOversized, fmt.Sprintf("%d bytes", n), nil)
			e.Limit = LimitMaxResultBytes
			return nil, e
		}
	}
	if res.IsError {
		out := map[string]any{
			KeyStatus:  StatusToolError,
			KeyMessage: toolErrorMessage,
		}
		if t.srv.cfg.ToolErrorDetail {
			if d := untrustedDetail(contentText(res.Content), MaxDetailBytes); d != "" {
				out[KeyUntrustedDetail] = d
			}
		}
		return out, nil
	}
	if t.out != nil {
		if res.StructuredContent == nil {
			return nil, t.protocol(o, ReasonMissingStructured, "", gc)
		}
		if err := t.out.Validate(res.StructuredContent); err != nil {
			return nil, t.protocol(o, ReasonSchemaViolation, err.Error(), gc)
		}
	}
	if res.StructuredContent != nil {
		if _, ok := res.StructuredContent.(map[string]any); !ok {
			return nil, t.protocol(o, ReasonMalformed, "structuredContent is not an object", gc)
		}
		return map[string]any{KeyOutput: res.StructuredContent}, nil
	}
	return map[string]any{KeyOutput: contentText(res.Content)}, nil
}

// protocol builds a protocol-fault *Error. detail (and the raw payload)
// reach the log only.
func (t *Tool) protocol(o *op, r Reason, detail string, gc *guardConn) *Error {
	e := o.err(BoundaryCallTool, fmt.Errorf("%s: %s", r, printable(detail, maxLogPayload)))
	e.Class, e.Reason, e.Granted = ClassProtocol, r, o.granted
	e.payload = gc.lastPayload(maxLogPayload)
	return e
}

func resultSize(res *mcp.CallToolResult) int {
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return len(b)
}

// contentText renders content blocks as text, like ADK's mcptoolset: text
// blocks verbatim, other blocks as placeholders.
func contentText(cs []mcp.Content) string {
	if len(cs) == 1 {
		if tc, ok := cs[0].(*mcp.TextContent); ok && tc != nil {
			return tc.Text
		}
	}
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			if c != nil {
				b.WriteString(c.Text)
			}
		case *mcp.ImageContent:
			if c != nil {
				fmt.Fprintf(&b, "[MCP image: %s, %d bytes]", printable(c.MIMEType, 64), len(c.Data))
			}
		case *mcp.AudioContent:
			if c != nil {
				fmt.Fprintf(&b, "[MCP audio: %s, %d bytes]", printable(c.MIMEType, 64), len(c.Data))
			}
		case *mcp.ResourceLink:
			b.WriteString("[MCP resource link]")
		case *mcp.EmbeddedResource:
			if c != nil && c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else {
				b.WriteString("[MCP embedded resource]")
			}
		default:
			b.WriteString("[MCP content: unsupported]")
		}
	}
	return b.String()
}

// resolveSchema resolves a tool's declared output schema, which arrives as
// decoded JSON.
func resolveSchema(v any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > 64<<10 {
		return nil, fmt.Errorf("output schema of %d bytes exceeds 64 KiB", len(b))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// printable keeps at most limit bytes of s, cut on a rune boundary, with
// control, bidi, format and tag characters dropped. For logs and the
// untrusted detail.
func printable(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), limit))
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
			(r >= 0xE0000 && r <= 0xE007F) || unicode.Is(unicode.Co, r) {
			if r == '\n' || r == '\t' {
				r = ' '
			} else {
				continue
			}
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}(\.[A-Za-z0-9_-]*)?`),
	regexp.MustCompile(`\b(sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{8,}`),
	regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{12,}`),
	regexp.MustCompile(`\b(gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}`),
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{8,}`),
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s/@]+@[^\s]*`),
	regexp.MustCompile(`(?i)\b(api[_-]?key|apikey|secret|password|passwd|pwd|token|access[_-]?token|auth)\s*[=:]\s*"?[^\s"&,;]+`),
	regexp.MustCompile(`(?i)https?://[^\s]+`),
	regexp.MustCompile(`\b(10|127|172\.(1[6-9]|2[0-9]|3[01])|192\.168)(\.[0-9]{1,3}){2,3}\b`),
}

var injectionPatterns = regexp.MustCompile(`(?i)(ignore (all )?(previous|prior|above) instructions|system prompt|you are now|disregard .{0,20}instructions)`)

// untrustedDetail redacts secret-looking tokens, URLs and private addresses
// from s, drops control, bidi and tag characters, neutralises instruction
// phrasing and bounds the result to limit bytes.
func untrustedDetail(s string, limit int) string {
	s = printable(s, 4*limit)
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "[redacted]")
	}
	s = injectionPatterns.ReplaceAllString(s, "[removed]")
	s = strings.Join(strings.Fields(s), " ")
	return printable(s, limit)
}
