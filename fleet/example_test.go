package fleet_test

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/fleet"
	"github.com/adkbreaker/adkbreaker/registry"
)

// A replica joins the fleet with its registry. New returns at once and
// admission never waits for Redis: here nothing listens at the address, so
// the replica breaks on its own.
func ExampleNew() {
	reg := registry.MustNew()
	f, err := fleet.New(reg,
		fleet.WithAddress("127.0.0.1:1"), // nothing listens here
		fleet.WithPrefix("billing-agent"),
		fleet.WithReplicaID("pod-a"),
		fleet.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	b, _ := reg.Get("billing-api")
	tk, d := b.Admit()
	tk.Done(registry.Success)
	fmt.Println("admitted:", d.Allowed, "replica:", f.ReplicaID(), "sharing:", f.Healthy())
	// Output: admitted: true replica: pod-a sharing: false
}

// Every problem with the options is reported at once; an address carrying
// a password is refused without being echoed.
func ExampleNew_invalid() {
	_, err := fleet.New(registry.MustNew(),
		fleet.WithAddress("redis://admin:hunter2@redis:6379"),
		fleet.WithPrefix("two words"),
		fleet.WithReconnectBackoff(-1, 0),
		fleet.WithShareInterval(time.Hour),
	)
	fmt.Println(err)
	// Output:
	// fleet: address: want host:port, got a URL or user info (32 bytes); pass credentials with WithCredentials or password_env
	// prefix: want at most 64 printable bytes without spaces or braces, got "two words"
	// min backoff: must be ≥ 0, got -1ns
	// share interval: want 0 (off) or 1ms to 1m0s, got 1h0m0s
}

// The configuration file's fleet section becomes options; the password
// comes from the environment variable it names.
func ExampleFromConfig() {
	f, err := config.Parse([]byte(`
version: 1
fleet:
  address: 127.0.0.1:1
  prefix: billing-agent
  command_timeout: 50ms
`), config.YAML)
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := registry.MustNew(f.RegistryOptions()...)
	fl, err := fleet.FromConfig(reg, f.Fleet, fleet.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fl.Close()
	fmt.Println("sharing:", fl.Healthy())
	// Output: sharing: false
}
