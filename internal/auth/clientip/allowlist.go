package clientip

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// CodeInvalidAllowlist is the domain error code for a bad allowed_ips entry.
const CodeInvalidAllowlist = "invalid_allowed_ips"

// keywords are the named entries of an allowlist.
//
//   - localhost: 127.0.0.0/8 and ::1 — the loopback ranges.
//   - private: the RFC 1918 ranges and IPv6 unique local addresses
//     (fc00::/7), the same set as netip.Addr.IsPrivate. Link-local
//     (169.254/16, fe80::/10) and carrier-grade NAT (100.64/10) are left out
//     on purpose: the first is not routed and is mostly cloud metadata, the
//     second is shared with other customers of the same provider.
var keywords = map[string][]netip.Prefix{
	"localhost": {netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	"private": {
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("fc00::/7"),
	},
}

// Allowlist is a parsed allowed_ips setting. The zero value and a list
// parsed from no entries allow every address.
type Allowlist struct {
	prefixes []netip.Prefix
}

// Parse parses allowed_ips entries: the keywords "localhost" and "private"
// (case-insensitive), single addresses ("192.0.2.7", "2001:db8::1") and CIDR
// prefixes ("10.0.0.0/8"). IPv4-mapped IPv6 is stored as IPv4. A prefix with
// host bits set ("10.0.0.1/8") is rejected as ambiguous, as are zones and
// empty entries. The error is a domain.ErrInvalid naming every bad entry.
func Parse(entries []string) (Allowlist, error) {
	var l Allowlist
	var bad []string
	for _, raw := range entries {
		ps, ok := parseEntry(strings.TrimSpace(raw))
		if !ok {
			bad = append(bad, raw)
			continue
		}
		l.prefixes = append(l.prefixes, ps...)
	}
	if len(bad) > 0 {
		quoted := make([]string, len(bad))
		for i, b := range bad {
			quoted[i] = fmt.Sprintf("%q", b)
		}
		return Allowlist{}, &domain.Error{
			Kind:    domain.ErrInvalid,
			Code:    CodeInvalidAllowlist,
			Message: "allowed_ips: not an IP address, CIDR prefix, \"localhost\" or \"private\": " + strings.Join(quoted, ", "),
			Details: bad,
		}
	}
	return l, nil
}

func parseEntry(e string) ([]netip.Prefix, bool) {
	if e == "" {
		return nil, false
	}
	if ps, ok := keywords[strings.ToLower(e)]; ok {
		return ps, true
	}
	if !strings.Contains(e, "/") {
		a, err := netip.ParseAddr(e)
		if err != nil || a.Zone() != "" {
			return nil, false
		}
		a = a.Unmap()
		return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}, true
	}
	p, err := netip.ParsePrefix(e)
	if err != nil || p.Masked() != p {
		return nil, false
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return nil, false // spans more than the mapped IPv4 space
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return []netip.Prefix{p}, true
}

// Empty reports whether the list has no entries and so allows everyone.
func (l Allowlist) Empty() bool { return len(l.prefixes) == 0 }

// Allows reports whether addr is allowed: always for an empty list;
// otherwise when a prefix contains addr (after unmapping IPv4-mapped IPv6).
// An invalid addr is allowed only by an empty list.
func (l Allowlist) Allows(addr netip.Addr) bool {
	if l.Empty() {
		return true
	}
	if !addr.IsValid() {
		return false
	}
	addr = normalize(addr)
	for _, p := range l.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Prefixes returns a copy of the parsed prefixes, keywords expanded.
func (l Allowlist) Prefixes() []netip.Prefix {
	return append([]netip.Prefix(nil), l.prefixes...)
}
