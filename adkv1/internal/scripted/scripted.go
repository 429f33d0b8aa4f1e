// Package scripted provides a model.LLM whose replies are scripted by a
// function. It stands in for a model's reasoning only: everything around it
// (the ADK runner, flow, callbacks, tools, sessions) is real.
package scripted

import (
	"context"
	"iter"
	"strings"
	"sync"

	"google.golang.org/adk/model"
	"google.golang.org/genai"
)

// Step decides the model's next reply from the request. Return nil to reply
// with an empty text.
type Step func(req *model.LLMRequest) *model.LLMResponse

// Model is a scripted model.LLM. It records every request it receives. It is
// safe for concurrent use.
type Model struct {
	name string
	step Step

	mu    sync.Mutex
	reqs  []*model.LLMRequest
	nolog bool
}

// WithoutLog stops m from keeping the requests it receives (for soak tests,
// where the log would grow without bound). Requests and Calls then report
// nothing.
func (m *Model) WithoutLog() *Model {
	m.mu.Lock()
	m.nolog = true
	m.mu.Unlock()
	return m
}

// New returns a scripted model.
func New(name string, step Step) *Model { return &Model{name: name, step: step} }

// Name returns the model name.
func (m *Model) Name() string { return m.name }

// GenerateContent returns the scripted reply. In streaming mode it yields the
// reply's text in two partial chunks and then the aggregated final reply, as
// ADK's gemini model does.
func (m *Model) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.mu.Lock()
		if !m.nolog {
			m.reqs = append(m.reqs, req)
		}
		m.mu.Unlock()
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		resp := m.step(req)
		if resp == nil {
			resp = Text("")
		}
		if stream {
			if t := TextOf(resp); t != "" && !HasCalls(resp) {
				half := len(t) / 2
				for _, part := range []string{t[:half], t[half:]} {
					// Partial chunks carry the usage so far, as Gemini's do.
					if !yield(&model.LLMResponse{Content: genai.NewContentFromText(part, genai.RoleModel), Partial: true, UsageMetadata: resp.UsageMetadata}, nil) {
						return
					}
				}
			}
		}
		yield(resp, nil)
	}
}

// Requests returns the requests received so far.
func (m *Model) Requests() []*model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.LLMRequest(nil), m.reqs...)
}

// Calls returns how many requests were received.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// Text is a final text reply.
func Text(s string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(s, genai.RoleModel), TurnComplete: true}
}

// Call is one function call of a reply.
type Call struct {
	Name string
	Args map[string]any
}

// CallTools is a reply that calls the given tools (in parallel, as one
// model response).
func CallTools(calls ...Call) *model.LLMResponse {
	c := &genai.Content{Role: genai.RoleModel}
	for _, call := range calls {
		args := call.Args
		if args == nil {
			args = map[string]any{}
		}
		c.Parts = append(c.Parts, genai.NewPartFromFunctionCall(call.Name, args))
	}
	return &model.LLMResponse{Content: c}
}

// LastResponses returns the function responses in the request's last
// content (what the tools just returned), or nil if the last content is not
// a tool result.
func LastResponses(req *model.LLMRequest) []*genai.FunctionResponse {
	if len(req.Contents) == 0 {
		return nil
	}
	var out []*genai.FunctionResponse
	for _, p := range req.Contents[len(req.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// TextOf concatenates a response's text parts.
func TextOf(r *model.LLMResponse) string {
	if r == nil || r.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Content.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// HasCalls reports whether r calls tools.
func HasCalls(r *model.LLMResponse) bool {
	if r == nil || r.Content == nil {
		return false
	}
	for _, p := range r.Content.Parts {
		if p.FunctionCall != nil {
			return true
		}
	}
	return false
}

// ToolDescription returns the description the request declares for a tool,
// and whether the tool is declared at all.
func ToolDescription(req *model.LLMRequest, name string) (string, bool) {
	if req.Config == nil {
		return "", false
	}
	for _, t := range req.Config.Tools {
		if t == nil {
			continue
		}
		for _, fd := range t.FunctionDeclarations {
			if fd != nil && fd.Name == name {
				return fd.Description, true
			}
		}
	}
	return "", false
}

// WithUsage sets r's usage metadata to prompt and candidates tokens (no
// total: consumers fall back to the sum), as a real model reports what a
// call cost, and returns r.
func WithUsage(r *model.LLMResponse, prompt, candidates int32) *model.LLMResponse {
	r.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: candidates}
	return r
}

// Costing returns step with usage metadata on every reply: prompt and
// candidates tokens (see WithUsage).
func Costing(step Step, prompt, candidates int32) Step {
	return func(req *model.LLMRequest) *model.LLMResponse {
		r := step(req)
		if r == nil {
			r = Text("")
		}
		return WithUsage(r, prompt, candidates)
	}
}
