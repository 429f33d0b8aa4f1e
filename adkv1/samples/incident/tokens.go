package main

import (
	"context"
	"encoding/json"

	"github.com/adkbreaker/adkbreaker/internal/incident"
	"google.golang.org/adk/model"
	"google.golang.org/genai"
)

// Tokens. The scripted models report usage metadata on every response, as
// a real model does, so that the tables can say what an outage turn costs
// in tokens. The count is deterministic and stands in for a tokenizer: a
// token per 4 bytes (rounded up) of JSON — for the prompt, the request's
// contents (the conversation so far, function calls and responses
// included), its system instruction and its tool declarations; for the
// response, its content. A turn that resends a growing conversation to
// the model pays for it again on every call, as it does with a real
// model.
const bytesPerToken = 4

// bill sets resp's usage metadata from req and resp, adds it to the
// turn's tokens and, during the outage, to the variant's, and returns resp.
func (m analyst) bill(ctx context.Context, req *model.LLMRequest, resp *model.LLMResponse) *model.LLMResponse {
	prompt := tokensOf(req.Contents)
	if c := req.Config; c != nil {
		prompt += tokensOf(c.SystemInstruction) + tokensOf(c.Tools)
	}
	out := tokensOf(resp.Content)
	resp.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount:     int32(prompt),
		CandidatesTokenCount: int32(out),
		TotalTokenCount:      int32(prompt + out),
	}
	if ts, _ := ctx.Value(incident.TurnKey{}).(*incident.TurnStats); ts != nil {
		ts.Tokens += prompt + out
	}
	if at := m.s.Since(); at >= incident.OutageFrom && at < incident.OutageTo {
		m.mu.Lock()
		m.res.TokensOutage += prompt + out
		m.mu.Unlock()
	}
	return resp
}

// tokensOf is the token count of v: its JSON's bytes over bytesPerToken,
// rounded up; nothing (nil) costs nothing.
func tokensOf(v any) int {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" {
		return 0
	}
	return (len(b) + bytesPerToken - 1) / bytesPerToken
}
