package mcpguard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adkbreaker/adkbreaker/redact"
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
			if d := untrusted(contentText(res.Content), MaxDetailBytes); d != "" {
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
				fmt.Fprintf(&b, "[MCP image: %s, %d bytes]", untrusted(c.MIMEType, 64), len(c.Data))
			}
		case *mcp.AudioContent:
			if c != nil {
				fmt.Fprintf(&b, "[MCP audio: %s, %d bytes]", untrusted(c.MIMEType, 64), len(c.Data))
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

// printable is redact.Printable, for log lines.
func printable(s string, limit int) string { return redact.Printable(s, limit) }

// untrusted is redact.Text: every server-provided string a model reads (a
// tool-error detail, a tool description, a MIME type) goes through it.
func untrusted(s string, limit int) string { return redact.Text(s, limit) }
