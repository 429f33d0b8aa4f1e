package config

import (
	"strings"
	"time"
)

// Fleet configures sharing of breaker state between replicas through Redis
// (package fleet). Absent: every replica breaks on its own.
type Fleet struct {
	// Address is the Redis server, host:port. Required.
	Address string `json:"address" yaml:"address"`
	// Username is the Redis ACL user; empty for the default user.
	Username string `json:"username,omitempty" yaml:"username,omitempty"`
	// PasswordEnv names the environment variable holding the Redis
	// password. The password itself never appears in the file.
	PasswordEnv string `json:"password_env,omitempty" yaml:"password_env,omitempty"`
	// DB is the Redis logical database.
	DB int `json:"db,omitempty" yaml:"db,omitempty"`
	// TLS, when present, connects with TLS.
	TLS *FleetTLS `json:"tls,omitempty" yaml:"tls,omitempty"`
	// Prefix namespaces keys and the channel; replicas with the same prefix
	// share state. Empty: "adkbreaker".
	Prefix string `json:"prefix,omitempty" yaml:"prefix,omitempty"`
	// ReplicaIDEnv names the environment variable holding this replica's ID
	// (a pod or instance name). Empty or unset: a random ID.
	ReplicaIDEnv string `json:"replica_id_env,omitempty" yaml:"replica_id_env,omitempty"`
	// DialTimeout bounds connecting. 0: 500ms.
	DialTimeout Duration `json:"dial_timeout,omitempty" yaml:"dial_timeout,omitempty"`
	// CommandTimeout bounds one Redis command. 0: 100ms.
	CommandTimeout Duration `json:"command_timeout,omitempty" yaml:"command_timeout,omitempty"`
	// ResyncInterval is how often current holds are re-read. 0: 5s.
	ResyncInterval Duration `json:"resync_interval,omitempty" yaml:"resync_interval,omitempty"`
	// MaxLease caps the fleet probe lease (otherwise the probe_lease of
	// the dependency's policy). 0: no cap.
	MaxLease Duration `json:"max_lease,omitempty" yaml:"max_lease,omitempty"`
	// ShareInterval is how often a replica shares its outcome counts, so
	// the fleet's failure rate can open a breaker. 0: 50ms; at most 1m.
	ShareInterval Duration `json:"share_interval,omitempty" yaml:"share_interval,omitempty"`
	// DisableOutcomeSharing keeps each replica's failure window its own
	// (trips and probes are still shared).
	DisableOutcomeSharing bool `json:"disable_outcome_sharing,omitempty" yaml:"disable_outcome_sharing,omitempty"`
	// LocalOperatorActions keeps an operator's isolate and reset on the
	// replica where they were taken (default: they apply to the fleet).
	LocalOperatorActions bool `json:"local_operator_actions,omitempty" yaml:"local_operator_actions,omitempty"`
}

// FleetTLS configures TLS to Redis.
type FleetTLS struct {
	// ServerName overrides the name checked in the server's certificate
	// (default: the host of address).
	ServerName string `json:"server_name,omitempty" yaml:"server_name,omitempty"`
	// CAFile is a PEM file of CAs to trust instead of the system's.
	CAFile string `json:"ca_file,omitempty" yaml:"ca_file,omitempty"`
}

func (c *File) validateFleet() problems {
	var ps problems
	f := c.Fleet
	if f == nil {
		return ps
	}
	switch {
	case strings.TrimSpace(f.Address) == "":
		ps.add("fleet.address", "required (host:port of the Redis server)")
	case strings.Contains(f.Address, "://") || strings.Contains(f.Address, "@"):
		// Not quoted: it may carry a password.
		ps.add("fleet.address", "want host:port, got a URL or user info (%d bytes); put the password in the variable named by password_env", len(f.Address))
	case !strings.Contains(f.Address, ":"):
		ps.add("fleet.address", "want host:port, got %s", refused("string", f.Address, true))
	}
	for _, e := range [][2]string{{"fleet.password_env", f.PasswordEnv}, {"fleet.replica_id_env", f.ReplicaIDEnv}} {
		path, env := e[0], e[1]
		if env != "" && !envName(env) {
			ps.add(path, "want the name of an environment variable (like REDIS_PASSWORD), not a value; got a %d-byte value that is not a variable name (not shown)", len(env))
		}
	}
	if f.DB < 0 {
		ps.add("fleet.db", "must be ≥ 0, got %d", f.DB)
	}
	// fleet.New's rule (package fleet cannot be imported here: it imports
	// config), so the file's line is named rather than FromConfig failing.
	if len(f.Prefix) > 64 || strings.ContainsFunc(f.Prefix, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '{' || r == '}' }) {
		ps.add("fleet.prefix", "want at most 64 printable bytes without spaces or braces, got %s", refused("string", f.Prefix, true))
	}
	for _, d := range []struct {
		path string
		v    Duration
	}{{"fleet.dial_timeout", f.DialTimeout}, {"fleet.command_timeout", f.CommandTimeout}, {"fleet.resync_interval", f.ResyncInterval}, {"fleet.max_lease", f.MaxLease}, {"fleet.share_interval", f.ShareInterval}} {
		if d.v < 0 {
			ps.add(d.path, "must be ≥ 0")
		}
	}
	switch si := time.Duration(f.ShareInterval); {
	case si > 0 && si < time.Millisecond, si > time.Minute:
		ps.add("fleet.share_interval", "want 1ms to 1m (0: 50ms), got %s", si)
	case si > 0 && f.DisableOutcomeSharing:
		ps.add("fleet.share_interval", "set, but disable_outcome_sharing is true")
	}
	if f.TLS != nil && f.TLS.CAFile != "" && strings.TrimSpace(f.TLS.CAFile) != f.TLS.CAFile {
		ps.add("fleet.tls.ca_file", "%q has leading or trailing spaces", f.TLS.CAFile)
	}
	return ps
}
