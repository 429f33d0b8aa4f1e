package callbacks

import (
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/degrade"
)

// addToolNote adds degrade.ToolNote to the description of every declared
// tool the handler protects with an enforcing breaker (Config.ToolNote). Declarations and their
// genai.Tool are cloned, never modified: a tool may hand the same
// declaration to every request (ADK's and mcpguard's MCP tools do), and
// modifying it would append the note once per turn. A description that
// already carries the note is left as it is.
func (h *Handler) addToolNote(req *model.LLMRequest) {
	for ti, gt := range req.Config.Tools {
		if gt == nil {
			continue
		}
		var decls []*genai.FunctionDeclaration
		for i, fd := range gt.FunctionDeclarations {
			if fd == nil || !h.notes(req.Tools[fd.Name]) {
				continue
			}
			desc := degrade.WithToolNote(fd.Description)
			if desc == fd.Description {
				continue
			}
			if decls == nil {
				decls = append([]*genai.FunctionDeclaration(nil), gt.FunctionDeclarations...)
			}
			c := *fd
			c.Description = desc
			decls[i] = &c
		}
		if decls != nil {
			ng := *gt
			ng.FunctionDeclarations = decls
			req.Config.Tools[ti] = &ng
		}
	}
}

// notes reports whether the request tool t gets the note: its calls go
// through a breaker (see resolver.protection), because the note promises a
// payload only a breaker sends, and that breaker enforces. A breaker in
// shadow mode never sends the payload, and shadow mode changes nothing the
// model reads.
func (h *Handler) notes(t any) bool {
	tt, ok := t.(tool.Tool)
	if !ok {
		return false
	}
	_, protected, shadow := h.res.protection(tt)
	return protected && !shadow
}
