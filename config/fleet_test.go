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
		`fleet.prefix: want at most 64 printable bytes without spaces or braces, got a string of 9 characters ("tw…") (line 6)`,
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

// TestFleetShareInterval: the outcome-sharing knobs are checked like the
// rest of the section (bounds, and no interval with sharing off).
func TestFleetShareInterval(t *testing.T) {
	f, err := config.Parse([]byte("version: 1\nfleet:\n  address: redis:6379\n  share_interval: 20ms\n"), config.YAML)
	if err != nil || f.Fleet.ShareInterval.String() != "20ms" || f.Fleet.DisableOutcomeSharing {
		t.Fatalf("%+v, %v", f, err)
	}
	f, err = config.Parse([]byte(`{"version": 1, "fleet": {"address": "redis:6379", "disable_outcome_sharing": true}}`), config.JSON)
	if err != nil || !f.Fleet.DisableOutcomeSharing {
		t.Fatalf("%+v, %v", f, err)
	}
	for src, want := range map[string]string{
		"  share_interval: 2m\n":                                  "fleet.share_interval: want 1ms to 1m (0: 50ms), got 2m0s (line 4)",
		"  share_interval: 500us\n":                               "fleet.share_interval: want 1ms to 1m (0: 50ms), got 500µs (line 4)",
		"  share_interval: -1s\n":                                 "fleet.share_interval: must be ≥ 0 (line 4)",
		"  share_interval: 1s\n  disable_outcome_sharing: true\n": "fleet.share_interval: set, but disable_outcome_sharing is true (line 4)",
	} {
		_, err := config.Parse([]byte("version: 1\nfleet:\n  address: redis:6379\n"+src), config.YAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

// TestFleetEnvNamesRefuseValues: a password pasted into password_env (or
// replica_id_env) is refused without being echoed, by the same rule as
// api_key_env and header_env: only a variable name passes, and nothing that
// looks like a credential. Before, only spaces, tabs and '=' were refused,
// so fleet.FromConfig then echoed the password as an unset variable's name.
func TestFleetEnvNamesRefuseValues(t *testing.T) {
	for _, v := range []string{"p@ssw0rd!Redis", "sk-live-ABCDEF0123456789", "ghp_0123456789abcdefABCDEF0123456789abcd", "1REDIS"} {
		for _, field := range []string{"password_env", "replica_id_env"} {
			_, err := config.Parse([]byte("version: 1\nfleet:\n  address: redis:6379\n  "+field+": \""+v+"\"\n"), config.YAML)
			if err == nil || !strings.Contains(err.Error(), "fleet."+field+": want the name of an environment variable") {
				t.Errorf("%s %q: %v", field, v, err)
				continue
			}
			if strings.Contains(err.Error(), v) {
				t.Errorf("%s: the value was echoed: %v", field, err)
			}
		}
	}
	if _, err := config.Parse([]byte("version: 1\nfleet:\n  address: redis:6379\n  password_env: REDIS_PASSWORD\n  replica_id_env: HOSTNAME\n"), config.YAML); err != nil {
		t.Errorf("variable names refused: %v", err)
	}
}

// TestFleetPrefixControlCharacters: a prefix fleet.New refuses (a control
// character) is refused by the file already, with its path and line, rather
// than only later by fleet.FromConfig.
func TestFleetPrefixControlCharacters(t *testing.T) {
	for _, p := range []string{`"a\u0001b"`, `"a\u007fb"`, `"a\rb"`} {
		_, err := config.Parse([]byte("version: 1\nfleet:\n  address: redis:6379\n  prefix: "+p+"\n"), config.YAML)
		if err == nil || !strings.Contains(err.Error(), "fleet.prefix: want at most 64 printable bytes without spaces or braces") || !strings.Contains(err.Error(), "(line 4)") {
			t.Errorf("prefix %s: %v", p, err)
		}
	}
}
