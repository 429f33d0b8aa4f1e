package mcpguard

import (
	"crypto/rand"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/registry"
)

// Tool is one MCP tool behind a Guard. It has ADK's function-tool method set
// (Declaration, Run, ProcessRequest) and reports its server's name from
// DependencyKey, so the adkbreaker plugin guards every tool of a server, and
// its discovery, with one breaker.
//
// Run returns the result as a map (KeyOutput, or KeyStatus=StatusToolError
// for an isError answer) or an *Error. A Tool is safe for concurrent use.
type Tool struct {
	srv        *server
	name       string // declared to the model (with the server's prefix)
	remote     string // on the server
	desc       string
	decl       *genai.FunctionDeclaration
	out        *jsonschema.Resolved // nil: no declared output schema
	idempotent bool
}

// Name returns the name declared to the model.
func (t *Tool) Name() string { return t.name }

// Description returns the server's description, sanitised and bounded.
func (t *Tool) Description() string { return t.desc }

// IsLongRunning returns false.
func (t *Tool) IsLongRunning() bool { return false }

// Declaration returns the function declaration sent to the model. It is
// shared between requests: do not modify it.
func (t *Tool) Declaration() *genai.FunctionDeclaration { return t.decl }

// DependencyKey returns the server's name, the dependency key of all its
// tools (callbacks.DependencyKeyer).
func (t *Tool) DependencyKey() string { return t.srv.cfg.Name }

// Server returns the server's name.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// RemoteName returns the tool's name on the server.
func (t *Tool) RemoteName() string { return t.remote }

// Idempotent reports whether a call may be retried after a fault: the
// operator listed it in Server.IdempotentTools, or the server is Trusted and
// annotated it idempotentHint. (A call that carries an idempotency key,
// WithIdempotencyKeys, may be retried as well.)
func (t *Tool) Idempotent() bool { return t.idempotent }

// MetaIdempotencyKey is the _meta field of a tools/call that carries its
// idempotency key (see WithIdempotencyKeys).
const MetaIdempotencyKey = "idempotency-key"

// NewIdempotencyKey returns a random key (crypto/rand.Text: 128 bits in
// base32), for WithIdempotencyKeys.
func NewIdempotencyKey() string { return rand.Text() }

func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Run calls the tool on its server, bounded by the server's policy. When
// the adkbreaker plugin (on the guard's registry) admitted the call, it also
// reports it; otherwise Run admits the call through the server's breaker
// itself — an open breaker refuses it with an *UnavailableError, without
// reaching the server — and reports its outcome.
func (t *Tool) Run(ctx agent.ToolContext, args any) (map[string]any, error) {
	s := t.srv
	if s.g.reg.Admitted(ctx, s.br.Key()) {
		return s.call(ctx, t, args)
	}
	tk, d := s.br.Admit()
	if !d.Allowed {
		s.h.unavailable(BoundaryCallTool, s.g.clock.Now())
		return nil, &UnavailableError{Server: s.cfg.Name, State: d.State, Refusal: d.Reason, RetryAfter: d.RetryAfter}
	}
	out, err := s.call(ctx, t, args)
	switch e := err.(type) {
	case nil:
		tk.Done(registry.Success)
	case *Error:
		tk.DoneWithRetryAfter(e.BreakerOutcome(), e.RetryAfter)
	default:
		tk.Done(registry.Excluded)
	}
	return out, err
}

// ProcessRequest registers the tool itself (this wrapper, not an inner tool)
// in req.Tools and adds its declaration, so that ADK dispatches calls, and
// passes the tool to callbacks, as this Tool.
func (t *Tool) ProcessRequest(_ agent.ToolContext, req *model.LLMRequest) error {
	return packTool(req, t)
}

// packTool does what ADK's internal toolutils.PackTool does: register the
// tool by name and append its declaration to the request's one
// function-declarations tool.
func packTool(req *model.LLMRequest, t *Tool) error {
	if req.Tools == nil {
		req.Tools = make(map[string]any)
	}
	if _, ok := req.Tools[t.name]; ok {
		return fmt.Errorf("duplicate tool: %q", t.name)
	}
	req.Tools[t.name] = t
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = append(gt.FunctionDeclarations, t.decl)
			return nil
		}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{t.decl}})
	return nil
}
