package fleet_test

import (
	"github.com/adkbreaker/adkbreaker/internal/docscheck"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/config"
	"github.com/adkbreaker/adkbreaker/fleet"
)

// TestConfigurationDocs keeps docs/configuration.md's fleet section true:
// its example parses and turns into options, every field of config.Fleet has
// a row, and every fleet option has a line.
func TestConfigurationDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := strings.Index(doc, "<!-- BEGIN fleet.yaml"), strings.Index(doc, "<!-- END fleet.yaml -->")
	if begin < 0 || end < begin {
		t.Fatal("no fleet.yaml block")
	}
	block := doc[begin:end]
	block = block[strings.Index(block, "```yaml\n")+len("```yaml\n"):]
	block = block[:strings.LastIndex(block, "```")]
	f, err := config.Parse([]byte(block), config.YAML)
	if err != nil {
		t.Fatalf("the fleet example does not parse: %v", err)
	}
	if f.Fleet == nil || f.Fleet.Address == "" || f.Fleet.TLS == nil {
		t.Fatalf("fleet example: %+v", f.Fleet)
	}
	t.Setenv("REDIS_PASSWORD", "x")
	f.Fleet.TLS.CAFile = "" // the example's CA file is not on this machine
	if _, err := fleet.Options(f.Fleet); err != nil {
		t.Fatalf("fleet example options: %v", err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[config.Fleet](), reflect.TypeFor[config.FleetTLS]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(doc, "| `"+name+"` |") && !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("field %s (%s) is missing from docs/configuration.md", name, typ.Name())
			}
		}
	}
	opts, _ := docscheck.Options(t, "*.go")
	n := len(opts)
	for _, o := range opts {
		if !strings.Contains(doc, "| `"+o+"(") {
			t.Errorf("fleet option %s is missing from docs/configuration.md", o)
		}
	}
	if n < 10 {
		t.Errorf("found %d fleet options", n)
	}
}
