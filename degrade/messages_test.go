package degrade_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adkbreaker/adkbreaker/degrade"
)

func TestFinalMessage(t *testing.T) {
	tests := []struct {
		name  string
		items []degrade.Unavailable
		want  string
	}{
		{
			"none", nil,
			"Sorry, I couldn't fully complete your request because a service it depends on is temporarily unavailable. Please try again in a little while.",
		},
		{
			"one", []degrade.Unavailable{{"search-api", 27 * time.Second}},
			"Sorry, I couldn't fully complete your request because search-api is temporarily unavailable. Please try again in about 27 seconds.",
		},
		{
			"two, largest retry, sorted, deduplicated",
			[]degrade.Unavailable{{"weather", 5 * time.Minute}, {"search", 90 * time.Second}, {"weather", 20 * time.Minute}},
			"Sorry, I couldn't fully complete your request because search and weather are temporarily unavailable. Please try again in about 20 minutes.",
		},
		{
			"three", []degrade.Unavailable{{"c", time.Hour}, {"b", time.Hour}, {"a", time.Hour}},
			"Sorry, I couldn't fully complete your request because a, b, and c are temporarily unavailable. Please try again in about 1 hour.",
		},
		{
			"sanitised, unusable names left out", []degrade.Unavailable{{"se\u202earch", time.Second}, {"\u200b", time.Second}},
			"Sorry, I couldn't fully complete your request because search is temporarily unavailable. Please try again in about 1 second.",
		},
		{
			"no usable name", []degrade.Unavailable{{"", 0}},
			"Sorry, I couldn't fully complete your request because a service it depends on is temporarily unavailable. Please try again in about 1 second.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := degrade.FinalMessage(tt.items); got != tt.want {
				t.Errorf("FinalMessage =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestFinalMessageBounded(t *testing.T) {
	var items []degrade.Unavailable
	for i := range 40 {
		items = append(items, degrade.Unavailable{Dependency: fmt.Sprintf("%02d-%s", i, strings.Repeat("x", 100)), RetryAfter: time.Minute})
	}
	got := degrade.FinalMessage(items)
	if len(got) > degrade.MaxMessageBytes {
		t.Errorf("FinalMessage is %d bytes: %q", len(got), got)
	}
	if !strings.Contains(got, " other services are temporarily unavailable. Please try again in about 1 minute.") {
		t.Errorf("FinalMessage does not count the hidden names: %q", got)
	}
}

func TestHumanisedRetry(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "about 1 second"},
		{time.Second, "about 1 second"},
		{2 * time.Second, "about 2 seconds"},
		{59 * time.Second, "about 59 seconds"},
		{60 * time.Second, "about 1 minute"},
		{61 * time.Second, "about 2 minutes"},
		{30 * time.Minute, "about 30 minutes"},
		{59*time.Minute + 1, "about 1 hour"},
		{10 * time.Hour, "about 1 hour"},
	}
	for _, tt := range tests {
		want := "The assistant is temporarily unavailable. Please try again in " + tt.want + "."
		if got := degrade.ModelUnavailableMessage(tt.d); got != want {
			t.Errorf("ModelUnavailableMessage(%v) = %q, want %q", tt.d, got, want)
		}
	}
}

func TestCapabilityNotice(t *testing.T) {
	if got := degrade.CapabilityNotice(nil); got != "" {
		t.Errorf("CapabilityNotice(nil) = %q, want empty", got)
	}
	if got := degrade.CapabilityNotice([]string{"", "\u202e"}); got != "" {
		t.Errorf("CapabilityNotice(unusable names) = %q, want empty", got)
	}
	got := degrade.CapabilityNotice([]string{"mcp:github", "mcp:jira\u202e", "mcp:github"})
	want := "Temporarily unavailable: mcp:github and mcp:jira. Their tools are not offered in this turn, so do not try to call them. Continue with the tools you have, and tell the user if part of the request cannot be done."
	if got != want {
		t.Errorf("CapabilityNotice =\n%q\nwant\n%q", got, want)
	}

	var many []string
	for i := range 30 {
		many = append(many, fmt.Sprintf("server-%02d-%s", i, strings.Repeat("y", 60)))
	}
	got = degrade.CapabilityNotice(many)
	if len(got) > degrade.MaxMessageBytes || !strings.Contains(got, " more. Their tools") {
		t.Errorf("CapabilityNotice(30 long names) = %d bytes: %q", len(got), got)
	}
	got = degrade.DegradedCapabilityNotice(many)
	if len(got) > degrade.MaxMessageBytes || !strings.Contains(got, " more. Their tools are still listed") {
		t.Errorf("DegradedCapabilityNotice(30 long names) = %d bytes: %q", len(got), got)
	}
	if got := degrade.DegradedCapabilityNotice([]string{"weather\u202e"}); got != "Temporarily unavailable: weather. Their tools are still listed, "+
		"but calls to them may return status unavailable; if one does, do not call it again in this turn. "+
		"Continue with the tools you have, and tell the user if part of the request cannot be done." {
		t.Errorf("DegradedCapabilityNotice = %q", got)
	}
}

func TestTurnBudgetMessage(t *testing.T) {
	tests := []struct {
		name  string
		items []degrade.Unavailable
		want  string
	}{
		{
			"nothing unavailable", nil,
			"Sorry, I couldn't complete your request within the steps and time allowed for one answer. Please try again, perhaps with a simpler request.",
		},
		{
			"one", []degrade.Unavailable{{"enrichment-api", 30 * time.Second}},
			"Sorry, I couldn't complete your request within the steps and time allowed for one answer: enrichment-api was temporarily unavailable. Please try again in about 30 seconds.",
		},
		{
			"two", []degrade.Unavailable{{"weather", time.Minute}, {"search", time.Second}},
			"Sorry, I couldn't complete your request within the steps and time allowed for one answer: search and weather were temporarily unavailable. Please try again in about 1 minute.",
		},
		{
			"no usable name", []degrade.Unavailable{{"\u200b", 0}},
			"Sorry, I couldn't complete your request within the steps and time allowed for one answer: a service it depends on was temporarily unavailable. Please try again in about 1 second.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := degrade.TurnBudgetMessage(tt.items); got != tt.want {
				t.Errorf("TurnBudgetMessage =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	var many []degrade.Unavailable
	for i := range 40 {
		many = append(many, degrade.Unavailable{Dependency: fmt.Sprintf("%02d-%s", i, strings.Repeat("x", 100)), RetryAfter: time.Minute})
	}
	if got := degrade.TurnBudgetMessage(many); len(got) > degrade.MaxMessageBytes || !strings.Contains(got, " other services were temporarily unavailable.") {
		t.Errorf("TurnBudgetMessage(40 long names) = %d bytes: %q", len(got), got)
	}
}

func ExampleTurnBudgetMessage() {
	fmt.Println(degrade.TurnBudgetMessage([]degrade.Unavailable{{Dependency: "enrichment-api", RetryAfter: 25 * time.Second}}))
	// Output: Sorry, I couldn't complete your request within the steps and time allowed for one answer: enrichment-api was temporarily unavailable. Please try again in about 25 seconds.
}
