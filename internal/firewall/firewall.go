// Package firewall is the pure part of LCM's host firewall management:
// rules and their validation, the commands of each backend (ufw,
// firewalld, nftables) and the parsers of what the server prints back
// (`ufw status verbose`, `nft list table`, `firewall-cmd --list-all`,
// `ss -tulpnH`). It runs nothing: internal/actions runs the commands over
// remote.Executor and proves the result by reading it back.
package firewall

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// Backends.
const (
	UFW       = "ufw"
	Firewalld = "firewalld"
	Nftables  = "nftables"
)

// Protocols of a rule.
const (
	TCP = "tcp"
	UDP = "udp"
	Any = "any"
)

// Limits of a rule. Each says why.
const (
	// MaxComment: ufw keeps comments in its rules files and nft in the
	// ruleset; 64 characters name a purpose without bloating either.
	MaxComment = 64
	// MaxRules bounds one server's rule set LCM manages (a job renders them
	// all into one nft table or ufw command list).
	MaxRules = 200
)

// Rule is one "allow" rule: traffic to a port (or range) with a protocol,
// optionally only from one source network.
type Rule struct {
	Port    int    `json:"port"`
	PortEnd int    `json:"port_end,omitempty"` // 0: a single port
	Proto   string `json:"proto"`              // tcp, udp or any
	Source  string `json:"source,omitempty"`   // CIDR or address; "" = anywhere
	Comment string `json:"comment,omitempty"`
}

// Validate checks r and normalises it in place (the source as a prefix,
// PortEnd 0 for a single port).
func (r *Rule) Validate() error {
	if r.Port < 1 || r.Port > 65535 {
		return fmt.Errorf("port must be 1-65535")
	}
	if r.PortEnd == r.Port {
		r.PortEnd = 0
	}
	if r.PortEnd != 0 && (r.PortEnd < r.Port || r.PortEnd > 65535) {
		return fmt.Errorf("port_end must be between port and 65535")
	}
	switch r.Proto {
	case TCP, UDP, Any:
	case "":
		r.Proto = TCP
	default:
		return fmt.Errorf(`proto must be "tcp", "udp" or "any"`)
	}
	if r.Source != "" {
		p, err := ParseSource(r.Source)
		if err != nil {
			return err
		}
		r.Source = p.String()
	}
	if err := ValidateComment(r.Comment); err != nil {
		return err
	}
	return nil
}

// ValidateComment accepts short printable comments without quotes or
// backslashes (they are passed to ufw and nft as arguments and strings).
func ValidateComment(c string) error {
	if len(c) > MaxComment || !utf8.ValidString(c) {
		return fmt.Errorf("comment must be valid text of at most %d bytes", MaxComment)
	}
	for _, ch := range c {
		if ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\'' || ch == '\\' || ch == '`' || ch == '$' || ch == ';' || ch == '#' {
			return fmt.Errorf("comment must not contain control characters, quotes, backslashes, $, ; or #")
		}
	}
	return nil
}

// ParseSource parses an address or CIDR ("203.0.113.7", "10.0.0.0/8",
// "2001:db8::/32") into a masked prefix.
func ParseSource(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("source %q is not an address or CIDR", s)
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("source %q must not have a zone", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("source %q is not an address or CIDR", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// PortSpec is "22" or "8000-8010" (ufw writes ranges with ':').
func (r Rule) PortSpec(sep string) string {
	if r.PortEnd > 0 {
		return fmt.Sprintf("%d%s%d", r.Port, sep, r.PortEnd)
	}
	return fmt.Sprint(r.Port)
}

// Key identifies a rule regardless of its comment: two rules with the
// same key are the same rule.
func (r Rule) Key() string {
	return fmt.Sprintf("%s/%s/%s", r.PortSpec("-"), r.Proto, r.Source)
}

// String is the rule in words, for job output and audit.
func (r Rule) String() string {
	from := "anywhere"
	if r.Source != "" {
		from = r.Source
	}
	return fmt.Sprintf("%s/%s from %s", r.PortSpec("-"), r.Proto, from)
}

// protos expands "any" into tcp and udp (ufw needs a protocol for a
// range; nft and firewalld always do).
func (r Rule) protos() []string {
	if r.Proto == Any {
		return []string{TCP, UDP}
	}
	return []string{r.Proto}
}

// Covers reports whether a rule set lets a TCP connection from addr reach
// port: the proof that enabling cannot cut LCM off before it is tried.
func Covers(rules []Rule, addr netip.Addr, port int) bool {
	for _, r := range rules {
		if r.Proto == UDP {
			continue
		}
		end := r.Port
		if r.PortEnd > 0 {
			end = r.PortEnd
		}
		if port < r.Port || port > end {
			continue
		}
		if r.Source == "" {
			return true
		}
		if p, err := netip.ParsePrefix(r.Source); err == nil && p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}
