package mcpguard_test

import (
	"testing"
	"testing/synctest"

	"google.golang.org/adk/agent"

	"github.com/adkbreaker/adkbreaker/mcpguard"
	"github.com/adkbreaker/adkbreaker/mcpguard/mcpfault"
)

// TestIdempotencyKeyMakesRetryable: a call carrying an idempotency key in
// its _meta may be retried after a fault although the operator did not list
// the tool, and the server sees the same key on every attempt; a call
// without a key is sent once.
func TestIdempotencyKeyMakesRetryable(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		name := map[bool]string{true: "with key", false: "without key"}[keyed]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := mcpfault.New(mcpfault.Config{})
				defer fs.Close()
				keys := 0
				g := mcpguard.MustNew(testRegistry(t), []mcpguard.Server{{Name: "pay", Dial: fs.Dial}},
					mcpguard.WithIdempotencyKeys(func(_ agent.ToolContext, tl *mcpguard.Tool, _ any) string {
						if !keyed || tl.RemoteName() != "charge" {
							return ""
						}
						keys++
						return mcpguard.NewIdempotencyKey()
					}))
				defer g.Close()
				tools, err := discover(t, t.Context(), g, "inv")
				if err != nil {
					t.Fatal(err)
				}
				fs.SetMode(mcpfault.Dropped) // the tool runs, its response is lost
				_, err = tools["charge"].Run(newToolCtx(t.Context()), map[string]any{"amount": 1})
				e := asError(t, err)
				metas := fs.CallMeta("charge")
				if !keyed {
					if len(metas) != 1 || e.Attempts != 1 || metas[0][mcpguard.MetaIdempotencyKey] != nil {
						t.Errorf("without a key: %d runs, %d attempts, meta %v; want one, sent once, no key", len(metas), e.Attempts, metas)
					}
					return
				}
				if len(metas) != 3 || e.Attempts != 3 || keys != 1 {
					t.Fatalf("with a key: %d runs, %d attempts, %d keys made; want 3 attempts of one keyed call", len(metas), e.Attempts, keys)
				}
				k, _ := metas[0][mcpguard.MetaIdempotencyKey].(string)
				for i, m := range metas {
					if m[mcpguard.MetaIdempotencyKey] != k || k == "" {
						t.Errorf("attempt %d carried key %v, want %q on every attempt", i+1, m[mcpguard.MetaIdempotencyKey], k)
					}
				}
			})
		})
	}
}
