package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/registry"
)

// TestTools: the file's tool mapping, as the status page takes it; a
// dependency without tools is left out, and the result is a copy.
func TestTools(t *testing.T) {
	f, err := config.Parse([]byte(`version: 1
dependencies:
  billing-api:
    tools: [get_invoice, "billing_*"]
  weather: {}
`), config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Tools()
	want := map[registry.Key][]string{"billing-api": {"get_invoice", "billing_*"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Tools() (-want +got):\n%s", diff)
	}
	got["billing-api"][0] = "changed"
	if f.Dependencies["billing-api"].Tools[0] != "get_invoice" {
		t.Error("Tools() shares its slices with the file")
	}
}
