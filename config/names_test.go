package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// TestDependencyNameIsNeverAnAddress: a dependency's name is shown to the
// model, so a URL, host:port, IP address, user@host or a name holding a
// credential is refused, each listed with the other problems of the file,
// and a credential is never repeated.
func TestDependencyNameIsNeverAnAddress(t *testing.T) {
	yaml := `version: 1
defaults: {turn_limit: -1}
dependencies:
  "https://svc:hunter2@billing.example/v1": {tools: [a]}
  "billing.example.com:443": {tools: [b]}
  "http://billing.internal/v1": {tools: [i]}
  "10.0.0.7": {tools: [c]}
  "[fd00::1]:9090": {tools: [d]}
  "admin@db.internal.example": {tools: [e]}
  "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q": {tools: [f]}
  billing-api: {tools: [g]}
  "mcp:files": {tools: [h]}
`
	_, err := config.Parse([]byte(yaml), config.YAML)
	if err == nil {
		t.Fatal("Parse accepted addresses as dependency names")
	}
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("error %T is not a *config.Error", err)
	}
	msg := err.Error()
	for _, want := range []string{"defaults.turn_limit", "is a URL", "is a host:port", "is an IP address", "is a user@host", "holds a credential"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "invalid dependency name"); n != 7 {
		t.Errorf("%d invalid names reported, want 7:\n%s", n, msg)
	}
	for _, secret := range []string{"hunter2", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error repeats %q:\n%s", secret, msg)
		}
	}
	for _, ok := range []string{"billing-api", "mcp:files"} {
		if strings.Contains(msg, "dependencies."+ok) {
			t.Errorf("valid name %s reported:\n%s", ok, msg)
		}
	}
}

func TestMCPServerNameIsNeverAnAddress(t *testing.T) {
	for _, name := range []string{"https://user:pw@mcp.internal", "10.0.0.7:8080"} {
		yaml := "version: 1\nmcp_servers:\n  \"" + name + "\":\n    url: http://127.0.0.1:9/mcp\n"
		_, err := config.Parse([]byte(yaml), config.YAML)
		if err == nil || !strings.Contains(err.Error(), "invalid server name") {
			t.Errorf("server named %q: err = %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("error echoes the credential: %v", err)
		}
	}
}
