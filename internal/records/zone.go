package records

import (
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/miekg/dns"
)

// Zone is an authoritative zone of a project: its origin, default TTL and
// the values of its SOA record. Serial is bumped (NextSerial) on every
// change to the zone or its sets.
type Zone struct {
	ID         string
	ProjectID  string
	Name       string // origin, lower-case FQDN: "example.com."
	DefaultTTL int64  // $TTL for sets without their own TTL
	MName      string // primary name server (SOA MNAME), FQDN
	RName      string // responsible mailbox (SOA RNAME) in domain form: "hostmaster.example.com."
	Refresh    uint32
	Retry      uint32
	Expire     uint32
	Minimum    uint32 // negative-caching TTL (RFC 2308)
	Serial     uint32
}

// SOA timer defaults, the values RIPE-203 recommends for small zones; used
// by DefaultZone so a zone needs only a name and a primary to be valid.
const (
	DefaultZoneTTL = 3600    // one hour: changes propagate within a coffee break
	DefaultRefresh = 86400   // secondaries poll daily; NOTIFY makes it faster
	DefaultRetry   = 7200    // two hours between failed refreshes
	DefaultExpire  = 3600000 // ~41 days: secondaries survive a long outage
	DefaultMinimum = 3600    // one hour of negative caching
)

// DefaultZone returns a zone with the default timers for name and primary.
func DefaultZone(name, mname, rname string) Zone {
	return Zone{Name: name, MName: mname, RName: rname, DefaultTTL: DefaultZoneTTL,
		Refresh: DefaultRefresh, Retry: DefaultRetry, Expire: DefaultExpire, Minimum: DefaultMinimum}
}

// NormalizeZone validates a zone's name and SOA fields and returns them in
// canonical form. An RName written as an e-mail address
// ("hostmaster@example.com") is converted to domain form.
func NormalizeZone(z Zone) (Zone, error) {
	name, err := NormalizeOrigin(z.Name)
	if err != nil {
		return Zone{}, err
	}
	z.Name = name
	if z.DefaultTTL < MinTTL || z.DefaultTTL > MaxTTL {
		return Zone{}, domain.Invalid("ttl_out_of_range",
			fmt.Sprintf("zone %s: default ttl %d is outside %d..%d", name, z.DefaultTTL, MinTTL, MaxTTL))
	}
	if z.MName, err = absoluteHost(z.MName); err != nil {
		return Zone{}, domain.Invalid("invalid_mname", fmt.Sprintf("zone %s: primary name server: %v", name, err))
	}
	rname := strings.ToLower(strings.TrimSpace(z.RName))
	if local, host, ok := strings.Cut(rname, "@"); ok {
		rname = strings.ReplaceAll(local, ".", `\.`) + "." + host
	}
	if _, ok := dns.IsDomainName(rname); !ok || rname == "" {
		return Zone{}, domain.Invalid("invalid_rname", fmt.Sprintf("zone %s: %q is not a mailbox", name, z.RName))
	}
	z.RName = dns.Fqdn(rname)
	if z.Refresh == 0 || z.Retry == 0 || z.Expire == 0 {
		return Zone{}, domain.Invalid("invalid_soa", fmt.Sprintf("zone %s: SOA refresh, retry and expire must be positive", name))
	}
	if z.Expire < z.Refresh+z.Retry {
		return Zone{}, domain.Invalid("invalid_soa", fmt.Sprintf("zone %s: SOA expire must exceed refresh + retry", name))
	}
	return z, nil
}

func absoluteHost(h string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(h))
	if n == "" {
		return "", fmt.Errorf("required")
	}
	n = dns.Fqdn(n)
	if err := checkHostname(n, false); err != nil {
		return "", fmt.Errorf("%q: %v", h, err)
	}
	return n, nil
}

// FQDN returns the absolute owner name of a set's relative name in zone z.
func (z Zone) FQDN(rel string) string {
	if rel == "@" {
		return z.Name
	}
	return rel + "." + z.Name
}
