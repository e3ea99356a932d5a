package dnsserver

import (
	"github.com/miekg/dns"
)

// maxChase bounds CNAME chasing inside a zone; a longer chain (or a loop)
// is answered with what was found so far and left to the resolver, as BIND
// does. Eight covers every sane chain.
const maxChase = 8

// answer fills m (a reply to a QUERY for qname/qtype, qname lower-case) from
// the snapshot. It does not handle zone transfers.
func (s *Snapshot) answer(m *dns.Msg, qname string, qtype uint16) {
	z := s.findZone(qname)
	if z == nil {
		m.Rcode = dns.RcodeRefused
		return
	}
	m.Authoritative = true
	for range maxChase {
		next, ok := z.lookup(m, qname, qtype)
		if !ok {
			return
		}
		qname = next
	}
}

// lookup answers one step for qname in z. When qname holds a CNAME whose
// target lies in z, it returns the target and true so the caller chases it.
func (z *zone) lookup(m *dns.Msg, qname string, qtype uint16) (string, bool) {
	if cut := z.cutAbove(qname); cut != "" && !(qname == cut && qtype == dns.TypeDS) {
		z.referral(m, cut)
		return "", false
	}
	n, wild := z.nodes[qname], false
	if n == nil {
		if n = z.wildcard(qname); n == nil {
			m.Rcode = dns.RcodeNameError
			m.Ns = append(m.Ns, z.negSOA)
			return "", false
		}
		wild = true
	}
	if cn := n.sets[dns.TypeCNAME]; len(cn) > 0 && qtype != dns.TypeCNAME {
		rr := owned(cn[0], qname, wild)
		m.Answer = append(m.Answer, rr)
		target := lowerName(rr.(*dns.CNAME).Target)
		if dns.IsSubDomain(z.origin, target) {
			return target, true
		}
		return "", false
	}
	rrs := n.sets[qtype]
	if qtype == dns.TypeANY && len(n.types) > 0 {
		rrs = n.sets[n.types[0]] // RFC 8482: one RRset is a full answer
	}
	if len(rrs) == 0 {
		m.Ns = append(m.Ns, z.negSOA)
		return "", false
	}
	for _, rr := range rrs {
		m.Answer = append(m.Answer, owned(rr, qname, wild))
	}
	z.additional(m, rrs)
	return "", false
}

// cutAbove returns the delegation point at or above qname (below the apex),
// or "".
func (z *zone) cutAbove(qname string) string {
	if len(z.cuts) == 0 {
		return ""
	}
	for name := qname; name != z.origin && name != ""; name = parent(name) {
		if z.cuts[name] {
			return name
		}
	}
	return ""
}

// referral answers for data below a delegation: the child's NS set in the
// authority section with glue, not authoritative (RFC 1034 §4.3.2).
func (z *zone) referral(m *dns.Msg, cut string) {
	if len(m.Answer) == 0 {
		m.Authoritative = false
	}
	ns := z.nodes[cut].sets[dns.TypeNS]
	m.Ns = append(m.Ns, ns...)
	for _, rr := range ns {
		z.glue(m, rr.(*dns.NS).Ns)
	}
}

// wildcard finds the closest encloser of a missing qname and returns the
// node of "*.<closest encloser>" if it exists (RFC 4592 §3.3.1).
func (z *zone) wildcard(qname string) *node {
	for ce := parent(qname); ce != "" && dns.IsSubDomain(z.origin, ce); ce = parent(ce) {
		if z.nodes[ce] != nil {
			return z.nodes["*."+ce]
		}
	}
	return nil
}

// additional adds in-zone addresses of MX, SRV and NS targets.
func (z *zone) additional(m *dns.Msg, rrs []dns.RR) {
	for _, rr := range rrs {
		switch r := rr.(type) {
		case *dns.MX:
			z.glue(m, r.Mx)
		case *dns.SRV:
			z.glue(m, r.Target)
		case *dns.NS:
			z.glue(m, r.Ns)
		}
	}
}

// glue appends the A and AAAA records of target when it lies in the zone.
func (z *zone) glue(m *dns.Msg, target string) {
	n := z.nodes[lowerName(target)]
	if n == nil {
		return
	}
	m.Extra = append(m.Extra, n.sets[dns.TypeA]...)
	m.Extra = append(m.Extra, n.sets[dns.TypeAAAA]...)
}

// owned returns rr, or a copy owned by qname when it came from a wildcard.
func owned(rr dns.RR, qname string, wild bool) dns.RR {
	if !wild {
		return rr
	}
	c := dns.Copy(rr)
	c.Header().Name = qname
	return c
}
