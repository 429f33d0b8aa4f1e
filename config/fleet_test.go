package config_test

import (
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
)

// TestFleetSectionListsEveryProblem: one bad fleet section, every problem
// reported with its path and line, and a password-bearing address never
// echoed.
func TestFleetSectionListsEveryProblem(t *testing.T) {
	_, err := config.Parse([]byte(`version: 1
fleet:
  address: redis://admin:hunter2-secret@redis:6379
  password_env: "hunter2 secret"
  db: -1
  prefix: "two words"
  dial_timeout: -1s
  bogus: 1
`), config.YAML)
	if err == nil {
		t.Fatal("accepted")
	}
	got := err.Error()
	for _, want := range []string{
		"fleet.bogus: unknown field",
		"fleet.address: want host:port, got a URL or user info (39 bytes)",
		"fleet.password_env: want the name of an environment variable",
		"fleet.db: must be ≥ 0, got -1 (line 5)",
		`fleet.prefix: want at most 64 bytes without spaces or braces, got "two words" (line 6)`,
		"fleet.dial_timeout: must be ≥ 0 (line 7)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Errorf("a secret was echoed:\n%s", got)
	}
	if _, err := config.Parse([]byte("version: 1\nfleet:\n  prefix: x\n"), config.YAML); err == nil || !strings.Contains(err.Error(), "fleet.address: required") {
		t.Errorf("missing address: %v", err)
	}
}

func TestFleetSectionJSON(t *testing.T) {
	f, err := config.Parse([]byte(`{"version": 1, "fleet": {"address": "redis:6379", "password_env": "REDIS_PASSWORD",
		"tls": {"server_name": "redis"}, "prefix": "agent", "command_timeout": "50ms", "resync_interval": 2}}`), config.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if f.Fleet.Address != "redis:6379" || f.Fleet.TLS.ServerName != "redis" || f.Fleet.ResyncInterval.String() != "2s" {
		t.Fatalf("%+v", f.Fleet)
	}
	_, err = config.Parse([]byte(`{"version": 1, "fleet": {"adress": "redis:6379"}}`), config.JSON)
	if err == nil || !strings.Contains(err.Error(), `fleet.adress: unknown field`) || !strings.Contains(err.Error(), "fleet.address: required") {
		t.Fatalf("misspelt field: %v", err)
	}
}
