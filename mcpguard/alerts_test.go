package mcpguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/adkbreaker/adkbreaker/mcpguard"
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

// TestAlertRules keeps the alert rules of docs/mcp.md true: they use the
// metrics' Prometheus names, and (where promtool is installed) they parse
// and pass the unit tests in testdata/alert_rules_test.yaml: the first
// protocol outcome alerts, a 20% fault rate alerts, a rising rate alerts.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "### Alerts")
	m := regexp.MustCompile("(?s)```yaml\n(groups:.*?)```").FindStringSubmatch(doc[max(i, 0):])
	if i < 0 || m == nil {
		t.Fatal("docs/mcp.md: no alert rules under ### Alerts")
	}
	rules := m[1]
	for _, n := range []string{
		promName(mcpguard.MetricOperations, "{operation}", true),
	} {
		if !strings.Contains(rules, n) {
			t.Errorf("the rules do not use %s", n)
		}
	}
	for _, n := range []string{
		promName(mcpguard.MetricLegDuration, "s", false) + "_bucket",
		promName(mcpguard.MetricRetries, "{retry}", true),
	} {
		if !strings.Contains(doc, n) {
			t.Errorf("docs/mcp.md does not use %s", n)
		}
	}
	tel, err := os.ReadFile("../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, stale := range regexp.MustCompile(`adkbreaker_mcp_\w+`).FindAllString(doc+string(tel), -1) {
		switch strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(stale, "_bucket"), "_sum"), "_count") {
		case promName(mcpguard.MetricOperations, "", true), promName(mcpguard.MetricRetries, "", true),
			promName(mcpguard.MetricLegDuration, "s", false):
		default:
			t.Errorf("docs/mcp.md or docs/telemetry.md names %s, which no instrument produces", stale)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil || testing.Short() {
		t.Skip("promtool is not installed, or -short: the rules are not run")
	}
	dir := t.TempDir()
	tests, err := os.ReadFile("testdata/alert_rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"rules.yaml": rules, "test.yaml": string(tests)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
