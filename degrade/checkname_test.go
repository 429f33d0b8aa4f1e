package degrade_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func TestCheckName(t *testing.T) {
	for _, name := range []string{"billing-api", "mcp:files", "search:2", "weather.v2", "model:gemini@gemini_api", "get_invoice", "météo"} {
		if err := degrade.CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{
		"https://user:hunter2@billing.example/v1", "http://billing.internal", "billing.example.com:443",
		"localhost:8080", "10.0.0.7", "10.0.0.7:8080", "[fd00::1]:9090", "fe80::1", "::1",
		"admin@db.internal.example", "svc:hunter2@db.internal", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
		"billing-api?token=abcdef123456",
	} {
		err := degrade.CheckName(name)
		if err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", name)
			continue
		}
		if strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckName(%q) = %q: the error repeats the name", name, err)
		}
	}
}
