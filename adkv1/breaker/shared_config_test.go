package breaker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/adkv1/breaker"
	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/degrade"
	"github.com/adkbreaker/adkbreaker/internal/fakebackend"
	"github.com/adkbreaker/adkbreaker/registry"
)

const sharedConfig = `
version: 1
defaults:
  tool_note: true
  policy: {consecutive_failures: 3, no_jitter: true, disable_failure_rate: true}
dependencies:
  billing-api:
    tools: [get_invoice, list_invoices]
    policy: {open_for: 30s}
`

// TestSharedRegistryFromFileNeedsTheFile: a registry built from a file
// (File.RegistryOptions), shared with a plugin that is not given the file,
// is an error at New; it used to build a plugin that silently keyed the
// file's tools by their own names, so neither the file's policy nor fleet
// sharing applied to them.
func TestSharedRegistryFromFileNeedsTheFile(t *testing.T) {
	f, err := config.Parse([]byte(sharedConfig), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.MustNew(f.RegistryOptions()...)
	_, err = breaker.New(breaker.WithRegistry(reg))
	if err == nil || !strings.Contains(err.Error(), "breaker.WithConfig(f)") {
		t.Fatalf("New(WithRegistry(registry from a file)) without the file: %v, want an error saying to add WithConfig", err)
	}
	// A registry built from a file that holds nothing for the plugin (only
	// policies) needs no file.
	g, err := config.Parse([]byte("version: 1\ndefaults:\n  policy: {consecutive_failures: 3}\n"), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := breaker.New(breaker.WithRegistry(registry.MustNew(g.RegistryOptions()...))); err != nil {
		t.Errorf("a policies-only file: %v", err)
	}
}

// TestSharedRegistryWithConfigFile: the one way to combine a shared
// registry with a file — the registry built from the file, the plugin given
// both — works on the real runner: the file's tools share the
// dependency's breaker (keyed billing-api, with the file's policy), and the
// file's tool_note reaches the model.
func TestSharedRegistryWithConfigFile(t *testing.T) {
	f, err := config.Parse([]byte(sharedConfig), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.MustNew(f.RegistryOptions()...)
	p, err := breaker.New(breaker.WithRegistry(reg), breaker.WithConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	backend := fakebackend.New()
	t.Cleanup(backend.Close)
	reqs := runOutage(t, backend, func(time.Duration) {}, p)
	b, ok := reg.Lookup("billing-api")
	if !ok {
		t.Fatalf("no billing-api breaker; breakers: %v", reg.Keys())
	}
	if _, ok := reg.Lookup("get_invoice"); ok {
		t.Error("get_invoice has a breaker of its own: the file's mapping was ignored")
	}
	if c := b.Counts(); c.Trips == 0 || c.ShortCircuits == 0 {
		t.Errorf("counts %+v: want the outage to trip billing-api and refuse calls", c)
	}
	if b.Policy().OpenFor != 30*time.Second || b.Policy().ConsecutiveFailures != 3 {
		t.Errorf("policy %+v, want the file's", b.Policy())
	}
	var first struct{ Config json.RawMessage }
	if err := json.Unmarshal([]byte(reqs[0]), &first); err != nil {
		t.Fatal(err)
	}
	note, _ := json.Marshal(degrade.ToolNote())
	if got := strings.Count(string(first.Config), strings.Trim(string(note), `"`)); got != 2 {
		t.Errorf("tool note in %d declarations of the first request, want both tools' (tool_note: true)", got)
	}
}
