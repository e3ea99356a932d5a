package records

import (
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/miekg/dns"
)

// NormalizeOrigin validates a zone origin and returns it lower-case and fully
// qualified ("example.com.").
func NormalizeOrigin(origin string) (string, error) {
	o := strings.ToLower(strings.TrimSpace(origin))
	if o == "" || o == "." {
		return "", domain.Invalid("invalid_zone_name", "zone name is required and cannot be the root")
	}
	o = dns.Fqdn(o)
	if err := checkHostname(o, false); err != nil {
		return "", domain.Invalid("invalid_zone_name", fmt.Sprintf("zone name %q: %v", origin, err))
	}
	return o, nil
}

// relativeName turns a set name into the form stored in a zone: "@" for the
// apex, otherwise the labels below the origin. A name ending in a dot is
// absolute and must lie inside the zone; any other name is relative to it.
// It returns the relative name and the owner's fully qualified name.
func relativeName(origin, name string) (rel, fqdn string, err error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "":
		return "", "", domain.Invalid("name_required", "record set name is required")
	case n == "@":
		return "@", origin, nil
	case strings.HasSuffix(n, "."):
		if !dns.IsSubDomain(origin, n) {
			return "", "", domain.Invalid("name_outside_zone",
				fmt.Sprintf("%q is not inside the zone %s", name, origin))
		}
		fqdn = n
	default:
		fqdn = n + "." + origin
	}
	if err := checkHostname(fqdn, true); err != nil {
		return "", "", domain.Invalid("invalid_name", fmt.Sprintf("name %q: %v", name, err))
	}
	if fqdn == origin {
		return "@", origin, nil
	}
	return strings.TrimSuffix(fqdn, "."+origin), fqdn, nil
}

// checkHostname accepts the owner names LCM manages: letters, digits, '-'
// and '_' (for _dmarc, _sip._tcp), labels of 1..63 octets, 255 octets in
// all, and — when wildcard is set — a lone '*' as the leftmost label.
// Escapes and other octets are refused: they are legal DNS but only ever
// appear in LCM data by mistake, and they make names compare unequally.
func checkHostname(fqdn string, wildcard bool) error {
	if len(fqdn) > 254 { // 255 octets in wire form = 254 characters plus the root
		return fmt.Errorf("longer than 255 octets")
	}
	labels := strings.Split(strings.TrimSuffix(fqdn, "."), ".")
	for i, l := range labels {
		if l == "" {
			return fmt.Errorf("empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q longer than 63 octets", l)
		}
		if l == "*" {
			if !wildcard || i != 0 {
				return fmt.Errorf("'*' is only allowed as the leftmost label")
			}
			continue
		}
		for _, c := range []byte(l) {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("label %q contains %q", l, string(rune(c)))
			}
		}
	}
	return nil
}
