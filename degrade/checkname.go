package degrade

import (
	"errors"
	"net/netip"
	"strings"

	"github.com/adkbreaker/adkbreaker/redact"
)

// CheckName reports why name cannot be a dependency's name, or nil if it
// can. A dependency's name is shown to the model in every payload, so it
// must be a name (billing-api, mcp:weather), never a URL, a host:port, an IP
// address or user@host, and never hold a credential (redact.Sensitive).
//
// The error never repeats name, which may hold a secret; configuration
// (config, plugin.WithDependency) reports it with the field at fault.
func CheckName(name string) error {
	switch {
	case redact.Sensitive(name):
		return errNameCredential
	case strings.Contains(name, "://"):
		return errNameURL
	case isAddress(name):
		return errNameAddress
	case isHostPort(name):
		return errNameHostPort
	case isUserAtHost(name):
		return errNameUserAtHost
	}
	return nil
}

var (
	errNameCredential = errors.New("looks like it holds a credential (a key, token, password or user info); it is shown to the model: name the dependency (like billing-api) and keep secrets out of configuration names")
	errNameURL        = errors.New("is a URL; it is shown to the model: name the dependency (like billing-api), not its address")
	errNameAddress    = errors.New("is an IP address; it is shown to the model: name the dependency (like billing-api), not its address")
	errNameHostPort   = errors.New("is a host:port address; it is shown to the model: name the dependency (like billing-api), not its address")
	errNameUserAtHost = errors.New("is a user@host address; it is shown to the model: name the dependency (like billing-api), not its address")
)

// isAddress reports whether s is an IP address, bracketed or not, with or
// without a port or zone.
func isAddress(s string) bool {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return true
	}
	_, err := netip.ParseAddrPort(s)
	return err == nil
}

// isHostPort reports whether s is host:port with a numeric port and a host
// that is a domain name (with a dot) or localhost. "mcp:files" and
// "search:2" are names.
func isHostPort(s string) bool {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || len(s)-i-1 > 5 {
		return false
	}
	for _, c := range s[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	host := s[:i]
	return strings.EqualFold(host, "localhost") || isDomain(host)
}

// isUserAtHost reports whether s is user@host with a domain name host.
func isUserAtHost(s string) bool {
	i := strings.LastIndexByte(s, '@')
	return i > 0 && isDomain(s[i+1:])
}

// isDomain reports whether s looks like a domain name with at least two
// labels of letters, digits and hyphens, the last one starting with a
// letter.
func isDomain(s string) bool {
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1][0]
	return last >= 'a' && last <= 'z' || last >= 'A' && last <= 'Z'
}
