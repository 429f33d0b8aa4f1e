// Package config loads adkbreaker configuration from a YAML or JSON file:
// dependencies, the tools mapped to them, their breaker policies, the
// per-invocation limits and model failover chains.
//
//	version: 1
//	defaults:
//	  short_circuit_limit: 2
//	  turn_limit: 5
//	  policy:
//	    consecutive_failures: 5
//	    open_for: 30s
//	dependencies:
//	  billing-api:
//	    tools: [get_invoice, "billing_*"]
//	    alternatives: [search_cached_invoices]
//	    policy:
//	      consecutive_failures: 3
//	      open_for: 1m
//
// Load reads a file (the extension picks the format); Parse decodes bytes.
// The plugin applies a file with plugin.WithConfig or plugin.WithConfigFile;
// failover.RegistryOptions adds the policies of the models section, and
// mcpguard.FromConfig builds guarded MCP toolsets from the mcp_servers
// section (whose header values are read from the environment, never written
// in the file).
//
// # Strict decoding
//
// Unknown fields, duplicate keys and values of the wrong type are errors in
// both formats (JSON field names are matched exactly, as in YAML). YAML is
// as strict as JSON: a fraction in an integer field (max_model_calls: 0.9),
// .inf or .nan in a number field, a number or boolean in a string field
// (tools: [42]) and YAML 1.1's yes or off in a boolean field are refused
// with their field path, where yaml.v3 alone would truncate or convert them.
// Durations are strings ("30s", "1m30s", "250ms") or numbers of seconds
// (90, 2.5).
//
// # Every problem at once
//
// An invalid configuration returns an *Error listing every problem, each
// named by its field path and, when it came from a file, its line:
//
//	config adkbreaker.yaml: 3 problems:
//	  dependencies.billing-api.policy.opne_for: unknown field "opne_for" (did you mean "open_for"?) (line 10, column 7)
//	  defaults.turn_limit: must be ≥ 0, got -1 (line 3)
//	  dependencies.crm.tools[0]: "get_invoice" is also mapped to dependency "billing-api" (dependencies.billing-api.tools[0]); a tool belongs to one dependency (line 13)
//
// Decoding problems come first, in file order, then validation problems.
// A value that could not be decoded is not reported again by validation.
//
// Problems end up in logs, and a value typed into the wrong field may be a
// secret (a password pasted as fleet.db), so a refused value is named by its
// kind and, if it is longer than four characters, by its length and first
// two characters only: "fleet.db: want an integer, got a string of 9
// characters ("hu…")". A near miss of a valid choice is shown whole, with a
// suggestion ("protec" (did you mean "protect"?)). Fields that name an
// environment variable never show the value.
//
// # Inheritance
//
// A dependency's policy overrides defaults.policy field by field: fields it
// leaves out (or sets to 0) inherit, and the no_jitter and
// disable_failure_rate switches may be set to false to turn off an inherited
// true. Fields still unset mean the registry defaults (registry.Policy). A
// dependency's policy is validated as the registry will see it, merged, so a
// cross-field rule such as max_open_for ≥ open_for holds across the two.
//
// The full reference is docs/configuration.md.
package config
