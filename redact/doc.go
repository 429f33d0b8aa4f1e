// Package redact is the one sanitiser for untrusted text that adkbreaker
// lets a model read: tool-error details and tool descriptions from MCP
// servers, and (through degrade.SafeName) the names in payloads.
//
// It has two functions:
//
//   - Printable normalises: it drops invisible characters (zero-width,
//     soft hyphen, word joiner, bidi controls, variation selectors, tags,
//     BOM, controls, private use), turns every Unicode space and line break
//     into one ASCII space and bounds the length. It redacts nothing; it is
//     for names and log lines.
//   - Text normalises first, so that nothing invisible or unusual can hide a
//     pattern, then redacts secrets (keys, tokens, credentials, URLs) and
//     internal addresses, neutralises instruction phrases aimed at the
//     model, and bounds the length. It is for everything a model reads that
//     came from outside.
//
// Both return valid UTF-8 of at most limit bytes, cut on a rune boundary.
//
// The package imports only the standard library, so that it can be fuzzed
// and reused on its own.
package redact
