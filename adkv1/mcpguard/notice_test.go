package mcpguard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestCachedListWhileOpenCarriesNotice: a server's calls open its breaker
// while its tool list is still fresh (ToolsTTL not over). Its tools are
// offered from that cached list, and the model is told the capability is
// degraded (degrade.DegradedCapabilityNotice), and Guard.Degraded lists an
// optional one. A required server that dies after Start is served the same
// way (the turn is not failed while a last good list exists; its calls get
// the unavailable payload); with NoLastGood its tools are left out and the
// turn fails with the typed error (required) or the missing-capability
// notice (optional). Before, a fresh cached list hid the open breaker: no
// notice, Degraded empty, and NoLastGood had no effect until ToolsTTL.
func TestCachedListWhileOpenCarriesNotice(t *testing.T) {
	for _, required := range []bool{false, true} {
		for _, noLastGood := range []bool{false, true} {
			t.Run(fmt.Sprintf("required=%v/no_last_good=%v", required, noLastGood), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fs := mcpfault.New(mcpfault.Config{})
					defer fs.Close()
					reg := testRegistry(t)
					g := mcpguard.MustNew(reg, []mcpguard.Server{{Name: "wx", Capability: "weather", Required: required,
						Dial: fs.Dial, NoLastGood: noLastGood, Retry: mcpguard.Retry{MaxAttempts: 1}}})
					defer g.Close()
					if err := g.Start(t.Context()); err != nil {
						t.Fatal(err)
					}
					llm := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "x"}}
					fs.DropConnections()
					fs.SetMode(mcpfault.Unreachable)
					synctest.Wait()
					for range 3 {
						runTurn(t, t.Context(), reg, g, llm)
					}
					br, _ := reg.Lookup("wx")
					if br.State() != registry.StateOpen {
						t.Fatalf("breaker %s after 3 failing calls", br.State())
					}
					llm2 := &scriptedLLM{Call: "echo", Args: map[string]any{"text": "y"}}
					tr := runTurn(t, t.Context(), reg, g, llm2)
					switch {
					case required && noLastGood:
						var ue *mcpguard.UnavailableError
						if !errors.As(tr.err, &ue) || ue.Server != "wx" {
							t.Errorf("turn err = %v, want the *UnavailableError of wx", tr.err)
						}
						return
					case tr.err != nil:
						t.Fatalf("turn failed: %v", tr.err)
					}
					req := llm2.requests()[0]
					sys := systemText(req)
					if noLastGood {
						if len(declared(req)) != 0 || !strings.Contains(sys, degrade.CapabilityNotice([]string{"weather"})) {
							t.Errorf("declared %v, system %q: want no tools and the missing-capability notice", declared(req), sys)
						}
					} else if len(declared(req)) != 5 || !strings.Contains(sys, degrade.DegradedCapabilityNotice([]string{"weather"})) {
						t.Errorf("declared %v, system %q: want the cached list and the degraded-capability notice", declared(req), sys)
					}
					d := g.Degraded()
					if required {
						if len(d) != 0 {
							t.Errorf("Degraded = %+v, want required servers never listed", d)
						}
						return
					}
					if len(d) != 1 || d[0].Server != "wx" || d[0].LastGood == noLastGood || !errors.Is(d[0].Err, registry.ErrOpen) {
						t.Errorf("Degraded = %+v, want wx (last good %v, breaker open)", d, !noLastGood)
					}
				})
			})
		}
	}
}
