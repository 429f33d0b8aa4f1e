package mcpguard_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/adkv1/mcpguard"
	"github.com/adkbreaker/adkbreaker/internal/browsertest"
)

// promName is the Prometheus name the OTel Prometheus exporter gives a
// metric by default: dots become underscores, the unit "s" adds _seconds,
// counters get _total.
func promName(otel, unit string, counter bool) string {
	n := strings.ReplaceAll(otel, ".", "_")
	if unit == "s" {
		n += "_seconds"
	}
	if counter {
		n += "_total"
	}
	return n
}

// TestAlertRules keeps the MCP alert rules true: docs/mcp.md shows
// dashboards/mcp_alerts.yml as it is, the rules and the docs use the
// metrics' Prometheus names, and (where promtool is installed) the rules
// parse and pass their unit tests in dashboards/mcp_alerts_test.yml: the
// first protocol outcome alerts, a 20% fault rate alerts, a rising rate
// alerts, budget exhaustion alerts.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	rb, err := os.ReadFile("../../dashboards/mcp_alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules := string(rb)
	m := regexp.MustCompile("(?s)<!-- BEGIN mcp_alerts.yml[^\n]*\n```yaml\n(.*?)```\n<!-- END mcp_alerts.yml -->").FindStringSubmatch(doc)
	if m == nil || m[1] != rules {
		t.Errorf("docs/mcp.md does not show dashboards/mcp_alerts.yml as it is")
	}
	if n := promName(mcpguard.MetricOperations, "{operation}", true); !strings.Contains(rules, n) {
		t.Errorf("the rules do not use %s", n)
	}
	for _, n := range []string{
		promName(mcpguard.MetricLegDuration, "s", false) + "_bucket",
		promName(mcpguard.MetricRetries, "{retry}", true),
	} {
		if !strings.Contains(doc, n) {
			t.Errorf("docs/mcp.md does not use %s", n)
		}
	}
	tel, err := os.ReadFile("../../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`adkbreaker_mcp_\w+`).FindAllString(doc+string(tel)+rules, -1) {
		switch strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count") {
		case promName(mcpguard.MetricOperations, "", true), promName(mcpguard.MetricRetries, "", true),
			promName(mcpguard.MetricLegDuration, "s", false):
		default:
			t.Errorf("%s is named in the docs or rules, but no instrument produces it", name)
		}
	}

	if testing.Short() {
		t.Skip("-short: the rules are not run")
	}
	promtool := browsertest.RequireTool(t, "prometheus", "promtool")
	for _, args := range [][]string{{"check", "rules", "mcp_alerts.yml"}, {"test", "rules", "mcp_alerts_test.yml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = "../../dashboards"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
