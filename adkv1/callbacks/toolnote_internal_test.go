package callbacks

import (
	"testing"

	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/adkbreaker/adkbreaker/registry"
)

// TestToolNoteSkipsUnprotected: a mapped tool left unprotected because the
// registry was full when it was bound gets no tool note (it never answers
// with the unavailable payload the note describes), like the GuardedTool
// auto-guarding that skips it.
func TestToolNoteSkipsUnprotected(t *testing.T) {
	reg := registry.MustNew(registry.WithMaxBreakers(1))
	if _, err := reg.Get("other"); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Registry: reg, RepeatLimit: NoRepeatLimit, ToolNote: true, Mappings: []Mapping{{Tools: []string{"lookup"}, Dependency: "dep"}}})
	if err != nil {
		t.Fatal(err)
	}
	tl := &scriptTool{}
	if bd := h.res.bind(tl); bd.br != nil || bd.key != "dep" {
		t.Fatalf("binding %+v, want dep unprotected (registry full)", bd)
	}
	const desc = "Looks up."
	req := &model.LLMRequest{
		Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "lookup", Description: desc}}}}},
		Tools:  map[string]any{"lookup": tl},
	}
	h.addToolNote(req)
	if got := req.Config.Tools[0].FunctionDeclarations[0].Description; got != desc {
		t.Errorf("unprotected tool described as %q, want %q", got, desc)
	}
}
