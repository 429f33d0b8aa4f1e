package breaker_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/adk/model"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/adkv1/internal/scripted"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
)

func loadSecrets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../degrade/testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if len(out) < 50 {
		t.Fatalf("secret corpus has %d seeds, want ≥ 50", len(out))
	}
	return out
}

// leaks returns the seeds (or 8-byte pieces of them) found in text.
func leaks(text string, seeds []string) []string {
	var out []string
	for _, s := range seeds {
		if strings.Contains(text, s) {
			out = append(out, s)
			continue
		}
		for i := 0; i+8 <= len(s); i++ {
			piece := s[i : i+8]
			if strings.TrimSpace(piece) != piece || !hasLetterOrDigit(piece) {
				continue
			}
			if strings.Contains(text, piece) {
				out = append(out, fmt.Sprintf("%q (from %q)", piece, s))
				break
			}
		}
	}
	return out
}

func hasLetterOrDigit(s string) bool {
	n := 0
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			n++
		}
	}
	return n >= 6
}

// TestSecretsNeverReachPayloads: upstream errors carrying credentials,
// internal addresses, stack traces and injected instructions trip the
// breaker; nothing the plugin writes for the model carries any of it.
func TestSecretsNeverReachPayloads(t *testing.T) {
	seeds := loadSecrets(t)
	for i, seed := range seeds {
		e := newEnv(t, func(req *model.LLMRequest) *model.LLMResponse {
			if rs := scripted.LastResponses(req); rs != nil {
				if _, ok := degrade.Parse(rs[0].Response); ok {
					return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}})
				}
				return scripted.Text("noted")
			}
			return scripted.CallTools(scripted.Call{Name: "get_invoice", Args: map[string]any{"id": "1"}})
		}, breaker.WithShortCircuitLimit(2), breaker.WithTurnLimit(3))
		e.backend.SetMode(fakebackend.Down)
		e.backend.SetErrorBody(seed)
		for range 3 { // trip: the tool's own errors carry the seed (ADK passes those)
			e.mustTurn("x")
		}
		evs := e.mustTurn("after the trip") // short-circuits, terminal guidance, turn ended by the plugin
		var ours strings.Builder
		for _, r := range functionResponses(evs) {
			if _, ok := degrade.Parse(r.Response); ok {
				b, _ := json.Marshal(r.Response)
				ours.Write(b)
			}
		}
		if ours.Len() == 0 {
			t.Fatalf("seed %d: no payload produced", i)
		}
		ours.WriteString(finalText(evs))
		for _, req := range e.llm.Requests() {
			if d, ok := scripted.ToolDescription(req, "get_invoice"); ok && strings.HasPrefix(d, "[UNAVAILABLE") {
				ours.WriteString(d)
			}
		}
		if l := leaks(ours.String(), seeds); len(l) > 0 {
			t.Fatalf("seed %d leaked into plugin output: %v\n%s", i, l, ours.String())
		}
	}
}
