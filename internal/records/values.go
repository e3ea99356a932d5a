package records

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// valueError is a problem with one record value; NormalizeSet turns it into
// a domain.Invalid error naming the set.
type valueError struct {
	code string
	msg  string
}

func (e *valueError) Error() string { return e.msg }

func badValue(code, format string, args ...any) error {
	return &valueError{code: code, msg: fmt.Sprintf(format, args...)}
}

// canonicalValue validates one record value of type typ owned by fqdn in
// zone origin and returns its canonical presentation form: what miekg/dns
// prints for the parsed RR, with domain names lower-case and absolute. When
// relOrigin is set (templates, sync groups) names under origin are printed
// relative to it instead, so they resolve in whichever zone the set lands.
func canonicalValue(origin, fqdn, typ, value string, relOrigin bool) (string, error) {
	c, err := canonicalValueOf(origin, fqdn, typ, value, relOrigin)
	// The canonical form escapes bytes (a tab becomes \009), so it can be
	// longer than what was sent: the limit holds for what is stored, or the
	// stored value would be refused when it is read back and normalised.
	if err == nil && len(c) > MaxValueLen {
		return "", badValue("record_too_long", "record value longer than %d bytes once escaped", MaxValueLen)
	}
	return c, err
}

func canonicalValueOf(origin, fqdn, typ, value string, relOrigin bool) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", badValue("empty_record", "empty record value")
	}
	if len(v) > MaxValueLen {
		return "", badValue("record_too_long", "record value longer than %d bytes", MaxValueLen)
	}
	// Free TXT text is quoted first, so a DMARC value such as
	// "v=DMARC1; p=none" keeps its ';' as text instead of being refused as
	// a zone-file comment.
	if typ == "TXT" && !strings.HasPrefix(v, `"`) {
		v = quoteTXT(v)
	}
	if err := screenValue(v); err != nil {
		return "", err
	}
	if typ == "A" || typ == "AAAA" {
		return canonicalAddr(typ, v)
	}
	rr, err := parseOne(origin, fqdn, typ, v)
	if err != nil {
		return "", err
	}
	mapNames(rr, func(n string) string {
		n = dns.CanonicalName(n)
		if relOrigin {
			n = relativize(origin, n)
		}
		return n
	})
	if c, ok := rr.(*dns.CAA); ok {
		c.Tag = strings.ToLower(c.Tag)
	}
	if relOrigin {
		if s, ok := relativeRdata(rr); ok {
			return s, nil
		}
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String()), nil
}

// relativeRdata prints the RDATA of the name-bearing types without the
// escaping miekg/dns applies, which would turn the relative apex "@" into
// the literal label "\@".
func relativeRdata(rr dns.RR) (string, bool) {
	switch r := rr.(type) {
	case *dns.CNAME:
		return r.Target, true
	case *dns.NS:
		return r.Ns, true
	case *dns.PTR:
		return r.Ptr, true
	case *dns.MX:
		return fmt.Sprintf("%d %s", r.Preference, r.Mx), true
	case *dns.SRV:
		return fmt.Sprintf("%d %d %d %s", r.Priority, r.Weight, r.Port, r.Target), true
	}
	return "", false
}

// screenValue refuses input that could smuggle extra records or directives
// into the zone-file line the value is parsed from: control characters
// (newlines), and — outside quoted strings — comments and parentheses, which
// would make the line mean something else than it shows.
func screenValue(v string) error {
	inQuote, escaped := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f {
			return badValue("control_character", "record value contains a control character")
		}
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == ';':
			return badValue("comment_not_allowed", "%q: ';' outside quotes is not allowed", v)
		case !inQuote && (c == '(' || c == ')'):
			return badValue("parenthesis_not_allowed", "%q: parentheses outside quotes are not allowed", v)
		}
	}
	if inQuote {
		return badValue("unbalanced_quotes", "%q: unbalanced quotes", v)
	}
	return nil
}

// canonicalAddr validates an address for an A or AAAA record. IPv4-mapped
// IPv6 addresses and zoned addresses are refused: they belong in A records
// or nowhere.
func canonicalAddr(typ, v string) (string, error) {
	a, err := netip.ParseAddr(v)
	if typ == "A" {
		if err != nil || !a.Is4() {
			return "", badValue("invalid_ipv4", "%q is not an IPv4 address", v)
		}
		return a.String(), nil
	}
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return "", badValue("invalid_ipv6", "%q is not an IPv6 address", v)
	}
	return a.String(), nil
}

// quoteTXT turns free text into TXT character-strings: one string, split
// into 255-octet chunks (RFC 1035 §3.3.14), with quotes and backslashes
// escaped. Without this "v=spf1 a ~all" would become three strings and the
// spaces would be lost when a client joins them.
func quoteTXT(v string) string {
	var b strings.Builder
	for len(v) > 0 {
		n := min(len(v), 255)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for _, c := range []byte(v[:n]) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
		v = v[n:]
	}
	return b.String()
}

// parseOne parses "owner 3600 IN TYPE value" as a one-line zone file with
// the zone's origin and demands exactly one RR of the expected type.
func parseOne(origin, fqdn, typ, v string) (dns.RR, error) {
	zp := dns.NewZoneParser(strings.NewReader(fqdn+" 3600 IN "+typ+" "+v+"\n"), origin, "")
	zp.SetIncludeAllowed(false)
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		return nil, badValue("invalid_record", "%q is not a valid %s record: %s", v, typ, parseReason(err))
	}
	if !ok || rr == nil {
		return nil, badValue("invalid_record", "%q is not a valid %s record", v, typ)
	}
	if _, more := zp.Next(); more || zp.Err() != nil {
		return nil, badValue("invalid_record", "%q is more than one %s record", v, typ)
	}
	if dns.TypeToString[rr.Header().Rrtype] != typ {
		return nil, badValue("invalid_record", "%q is not a valid %s record", v, typ)
	}
	return rr, nil
}

// parseReason extracts miekg/dns's short reason from a parse error without
// the synthetic file position.
func parseReason(err error) string {
	var pe *dns.ParseError
	if errors.As(err, &pe) {
		s := pe.Error()
		if i := strings.Index(s, ": "); i >= 0 && strings.HasPrefix(s, "dns: ") {
			s = s[5:]
		}
		if i := strings.Index(s, ": \""); i >= 0 {
			s = s[:i]
		}
		return s
	}
	return err.Error()
}

// mapNames rewrites the domain names inside the RDATA of the supported types.
func mapNames(rr dns.RR, f func(string) string) {
	switch r := rr.(type) {
	case *dns.CNAME:
		r.Target = f(r.Target)
	case *dns.NS:
		r.Ns = f(r.Ns)
	case *dns.PTR:
		r.Ptr = f(r.Ptr)
	case *dns.MX:
		r.Mx = f(r.Mx)
	case *dns.SRV:
		r.Target = f(r.Target)
	}
}

// relativize prints a name under origin relative to it ("@" for origin).
func relativize(origin, n string) string {
	switch {
	case n == origin:
		return "@"
	case dns.IsSubDomain(origin, n):
		return strings.TrimSuffix(n, "."+origin)
	}
	return n
}
