package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// Options returns the options a configuration file's fleet section
// describes: the password and replica ID are read from the environment
// variables it names, the TLS CA file from disk. Problems are listed at
// once; no error carries a secret.
func Options(c *config.Fleet) ([]Option, error) {
	if c == nil {
		return nil, errors.New("fleet: no fleet section")
	}
	var errs []error
	opts := []Option{
		WithAddress(c.Address), WithDB(c.DB), WithPrefix(c.Prefix),
		WithTimeouts(time.Duration(c.DialTimeout), time.Duration(c.CommandTimeout)),
		WithResyncInterval(time.Duration(c.ResyncInterval)), WithMaxLease(time.Duration(c.MaxLease)),
	}
	switch {
	case c.DisableOutcomeSharing:
		opts = append(opts, WithoutOutcomeSharing())
	case c.ShareInterval != 0:
		opts = append(opts, WithShareInterval(time.Duration(c.ShareInterval)))
	}
	if c.LocalOperatorActions {
		opts = append(opts, WithLocalOperatorActions())
	}
	password := ""
	if c.PasswordEnv != "" {
		v, ok := os.LookupEnv(c.PasswordEnv)
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("fleet.password_env: the variable %s is not set", c.PasswordEnv))
		}
		password = v
	}
	if c.Username != "" || password != "" {
		opts = append(opts, WithCredentials(c.Username, password))
	}
	if c.ReplicaIDEnv != "" {
		if id := os.Getenv(c.ReplicaIDEnv); id != "" {
			opts = append(opts, WithReplicaID(id))
		}
	}
	if t := c.TLS; t != nil {
		tc := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			pool := x509.NewCertPool()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("fleet.tls.ca_file: %w", err))
			case !pool.AppendCertsFromPEM(pem):
				errs = append(errs, fmt.Errorf("fleet.tls.ca_file: %s holds no PEM certificate", t.CAFile))
			default:
				tc.RootCAs = pool
			}
		}
		opts = append(opts, WithTLS(tc))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return opts, nil
}

// FromConfig is New with the options of a configuration file's fleet
// section, followed by extra (which win).
func FromConfig(reg *registry.Registry, c *config.Fleet, extra ...Option) (*Fleet, error) {
	opts, err := Options(c)
	if err != nil {
		return nil, err
	}
	return New(reg, append(opts, extra...)...)
}
