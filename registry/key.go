package registry

import "unicode/utf8"

// Key names a dependency: a backend that one or more tools, an MCP server or a
// model endpoint call. Keys come from configuration, never from strings the
// model controls.
type Key string

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = 128

// Valid reports whether k is non-empty, at most MaxKeyLen bytes, valid UTF-8
// and free of control characters.
func (k Key) Valid() bool {
	if k == "" || len(k) > MaxKeyLen || !utf8.ValidString(string(k)) {
		return false
	}
	for _, r := range string(k) {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
