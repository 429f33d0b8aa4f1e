package config

import (
	"strings"
	"testing"
)

func TestSegAndParent(t *testing.T) {
	for key, want := range map[string]string{
		"billing-api": "billing-api",
		"mcp:github":  "mcp:github",
		"données":     "données",
		"api.v2":      `"api.v2"`,
		"a b":         `"a b"`,
		"":            `""`,
		`a"b`:         `"a\"b"`,
		"t[0]":        `"t[0]"`,
		"ctl\x01":     `"ctl\x01"`,
	} {
		if got := seg(key); got != want {
			t.Errorf("seg(%q) = %s, want %s", key, got, want)
		}
		// parent undoes join for every key.
		if got := parent(join("dependencies", seg(key))); got != "dependencies" {
			t.Errorf("parent(dependencies.%s) = %q", seg(key), got)
		}
		if got := parent(join("dependencies", seg(key)) + ".policy"); got != "dependencies."+seg(key) {
			t.Errorf("parent(dependencies.%s.policy) = %q", seg(key), got)
		}
	}
	for path, want := range map[string]string{
		"a.b[2]":                         "a.b",
		"a.b":                            "a",
		"a":                              "",
		"":                               "",
		`"x.y"`:                          "",
		`dependencies."a.b".tools[0]`:    `dependencies."a.b".tools`,
		`dependencies."a\".b"`:           "dependencies",
		`dependencies."a\\".policy`:      `dependencies."a\\"`,
		"models.chat.endpoints[1].model": "models.chat.endpoints[1]",
	} {
		if got := parent(path); got != want {
			t.Errorf("parent(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := fieldNames(schemaTypes["config.Policy"])
	for in, want := range map[string]string{
		"opne_for":               "open_for",
		"open-for":               "open_for",
		"OPEN_FOR":               "open_for",
		"consecutive_failure":    "consecutive_failures",
		"halfopen_probes":        "half_open_probes",
		"color":                  "",
		"":                       "",
		strings.Repeat("x", 100): "",
	} {
		if got := suggest(names, in); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
