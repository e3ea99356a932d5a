package records

import "github.com/miekg/dns"

// TTL bounds for record sets and zone defaults. RFC 2181 §8 allows
// 0..2^31-1, but resolvers cap what they cache at about a week (BIND's
// max-cache-ttl defaults to 7 days), so a larger TTL buys nothing and only
// makes a mistake last longer in caches that do not cap. Zero is allowed: it
// is valid (RFC 1035 §3.2.1) and useful right before a migration.
const (
	MinTTL int64 = 0
	MaxTTL int64 = 604800
)

// Size limits on a record set. A set must fit in one DNS message with room
// for the rest of the answer, and a value longer than a few kilobytes is a
// paste error rather than data; the limits keep both in check.
const (
	MaxRecordsPerSet = 100
	MaxValueLen      = 4096
)

// templateOrigin is the placeholder zone used to validate template and sync
// group sets, which are not bound to a zone yet. ".invalid" is reserved by
// RFC 6761 and can never be a real zone, so names under it are always our
// own relative names.
const templateOrigin = "lcm-template.invalid."

// supportedTypes lists the record types a set may have, with the RR type
// code miekg/dns uses. SOA is absent on purpose: it is generated from the
// zone's fields and its serial.
var supportedTypes = map[string]uint16{
	"A":     dns.TypeA,
	"NS":    dns.TypeNS,
	"CNAME": dns.TypeCNAME,
	"PTR":   dns.TypePTR,
	"MX":    dns.TypeMX,
	"TXT":   dns.TypeTXT,
	"AAAA":  dns.TypeAAAA,
	"SRV":   dns.TypeSRV,
	"CAA":   dns.TypeCAA,
}

// SupportedTypes returns the record types a set may have, sorted.
func SupportedTypes() []string {
	return []string{"A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SRV", "TXT"}
}
