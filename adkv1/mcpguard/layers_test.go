package mcpguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard/mcpfault"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestLayeredTimeouts: the layering rule, "each outer timeout must exceed the
// plausible sum of the inner ones", one case per rule: the operation budget
// holds one attempt of each operation (counting the legs that are set), and
// the breaker's window and probe lease hold the operation budget.
func TestLayeredTimeouts(t *testing.T) {
	dial := (&mcpfault.Server{}).Dial
	tests := []struct {
		name string
		srv  mcpguard.Server
		pol  registry.Policy
		want string // "" = valid
	}{
		{"defaults", mcpguard.Server{}, registry.Policy{}, ""},
		{"budget narrows default legs", mcpguard.Server{OperationBudget: 2 * time.Second}, registry.Policy{}, ""},
		{"legs exactly fill the budget", mcpguard.Server{ConnectTimeout: 5 * time.Second, CallTimeout: 15 * time.Second, OperationBudget: 20 * time.Second}, registry.Policy{}, ""},
		{"call attempt does not fit", mcpguard.Server{ConnectTimeout: 10 * time.Second, CallTimeout: 30 * time.Second, OperationBudget: 20 * time.Second}, registry.Policy{},
			"operation_budget: must be at least connect_timeout + call_timeout (40s) to hold one call attempt, got 20s"},
		{"discovery attempt does not fit", mcpguard.Server{DiscoveryTimeout: 20 * time.Second, OperationBudget: 15 * time.Second}, registry.Policy{},
			"operation_budget: must be at least connect_timeout + discovery_timeout (20s) to hold one discovery attempt, got 15s"},
		{"explicit call above the default budget", mcpguard.Server{CallTimeout: time.Minute}, registry.Policy{ProbeLease: 2 * time.Minute, Window: 5 * time.Minute},
			"hold one call attempt, got 45s"},
		{"window equal to the budget", mcpguard.Server{OperationBudget: 30 * time.Second}, registry.Policy{Window: 30 * time.Second},
			"operation_budget 30s reaches the breaker's window 30s"},
		{"window below the budget", mcpguard.Server{}, registry.Policy{Window: 10 * time.Second},
			"operation_budget 45s reaches the breaker's window 10s"},
		{"lease below the budget", mcpguard.Server{}, registry.Policy{ProbeLease: 30 * time.Second},
			"operation_budget 45s exceeds the breaker's probe_lease 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.srv
			s.Name, s.Dial = "svc", dial
			reg := registry.MustNew(registry.WithDefaultPolicy(tt.pol))
			_, err := mcpguard.New(reg, []mcpguard.Server{s})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

// Every violation is reported at once, with the other problems.
func TestLayeredTimeoutsReportedWithEverything(t *testing.T) {
	dial := (&mcpfault.Server{}).Dial
	reg := registry.MustNew(registry.WithDefaultPolicy(registry.Policy{Window: 20 * time.Second, ProbeLease: 10 * time.Second}))
	_, err := mcpguard.New(reg, []mcpguard.Server{
		{Name: "a", Dial: dial, ConnectTimeout: 10 * time.Second, DiscoveryTimeout: 10 * time.Second, CallTimeout: 10 * time.Second, OperationBudget: 15 * time.Second, MaxTools: 5000},
		{Name: "b", Dial: dial, OperationBudget: 15 * time.Second},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"servers[0] (a): max_tools", "servers[0] (a): operation_budget: must be at least connect_timeout + discovery_timeout",
		"servers[0] (a): operation_budget: must be at least connect_timeout + call_timeout",
		"servers[1] (b): operation_budget 15s exceeds the breaker's probe_lease 10s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "servers[1] (b): operation_budget 15s reaches the breaker's window") {
		t.Errorf("a window above the budget reported:\n%v", err)
	}
}
