package config_test

import (
	"fmt"

	"github.com/adkbreaker/adkbreaker/config"
)

// ExampleParse parses a file and prints the effective policy of one
// dependency: its own fields over defaults.policy, then the registry
// defaults for what neither sets.
func ExampleParse() {
	f, err := config.Parse([]byte(`
version: 1
defaults:
  policy:
    consecutive_failures: 5
    open_for: 30s
    no_jitter: true
dependencies:
  billing-api:
    tools: [get_invoice, "billing_*"]
    policy:
      consecutive_failures: 3
      open_for: 1m30s
      slow_call: 2.5   # seconds
`), config.YAML)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := f.PolicyFor("billing-api").WithDefaults()
	fmt.Println("consecutive_failures:", p.ConsecutiveFailures)
	fmt.Println("open_for:", p.OpenFor)
	fmt.Println("slow_call:", p.SlowCall)
	fmt.Println("max_open_for:", p.MaxOpenFor)
	fmt.Println("open_jitter:", p.OpenJitter)
	fmt.Println("failure_rate:", p.FailureRate, "over", p.MinCalls, "calls in", p.Window)
	// Output:
	// consecutive_failures: 3
	// open_for: 1m30s
	// slow_call: 2.5s
	// max_open_for: 2m0s
	// open_jitter: 0
	// failure_rate: 0.5 over 20 calls in 1m0s
}

// ExampleParse_errors shows an invalid file: every problem is reported at
// once, each named by its field path and line.
func ExampleParse_errors() {
	_, err := config.Parse([]byte(`
version: 1
defaults:
  turn_limit: -1
  policy:
    open_for: soon
dependencies:
  billing-api:
    tools: [get_invoice]
    policy:
      opne_for: 1m
      failure_rate: 1.5
  crm:
    tools: [get_invoice]
`), config.YAML)
	fmt.Println(err)
	// Output:
	// config: 5 problems:
	//   defaults.policy.open_for: want a duration like "30s" or "1m30s", or a number of seconds, got the string "soon" (line 6, column 15)
	//   dependencies.billing-api.policy.opne_for: unknown field "opne_for" (did you mean "open_for"?) (line 11, column 7)
	//   defaults.turn_limit: must be ≥ 0, got -1 (line 4)
	//   dependencies.billing-api.policy.failure_rate: must be in (0, 1], got 1.5 (line 12)
	//   dependencies.crm.tools[0]: "get_invoice" is also mapped to dependency "billing-api" (dependencies.billing-api.tools[0]); a tool belongs to one dependency (line 14)
}

// ExampleParse_secretInTheWrongField: a password pasted where a number or a
// duration was due is named by its kind and first two characters, never
// repeated.
func ExampleParse_secretInTheWrongField() {
	_, err := config.Parse([]byte(`version: 1
fleet:
  address: redis:6379
  db: hunter2pw
defaults:
  policy:
    open_for: hunter2pw
mcp_servers:
  notes:
    url: https://notes.example/mcp
    max_tools: hunter2pw
`), config.YAML)
	fmt.Println(err)
	// Output:
	// config: 3 problems:
	//   fleet.db: want an integer, got a string of 9 characters ("hu…") (line 4, column 7)
	//   defaults.policy.open_for: want a duration like "30s" or "1m30s", or a number of seconds, got a string of 9 characters ("hu…") (line 7, column 15)
	//   mcp_servers.notes.max_tools: want an integer, got a string of 9 characters ("hu…") (line 11, column 16)
}

// ExampleLoad loads a file; its extension picks the format.
func ExampleLoad() {
	f, err := config.Load("testdata/full.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(f.Dependencies), "dependencies;", "billing-api opens for", f.PolicyFor("billing-api").OpenFor)
	// Output: 3 dependencies; billing-api opens for 1m30s
}
