package dnsserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/records"
	"github.com/miekg/dns"
)

// axfrChunkBytes bounds the wire size of the records in one AXFR message.
// TCP messages may reach 64 KiB; a quarter of that keeps every message far
// from the limit while still needing few messages for typical zones.
const axfrChunkBytes = 16 * 1024

// ZoneInput is one zone and its stored sets, as the records service loads
// them.
type ZoneInput struct {
	Zone records.Zone
	Sets []records.ZoneSet
}

// Snapshot is an immutable, precomputed view of every served zone. Build it
// with NewSnapshot and hand it to Server.Swap; never modify it afterwards.
type Snapshot struct {
	zones map[string]*zone // by origin, lower-case FQDN
}

// zone is one zone's precomputed data.
type zone struct {
	origin string
	soa    *dns.SOA
	negSOA *dns.SOA         // SOA with the RFC 2308 negative TTL, for NXDOMAIN/NODATA
	nodes  map[string]*node // every owner name and empty non-terminal
	cuts   map[string]bool  // delegation points (NS sets below the apex)
	axfr   [][]dns.RR       // records between the two SOAs, in chunks
}

// node holds the RRsets at one owner name; an empty non-terminal has none.
type node struct {
	sets  map[uint16][]dns.RR
	types []uint16 // sorted, for ANY
}

// NewSnapshot validates and indexes zones. A zone whose data does not
// validate fails the whole snapshot: the caller keeps serving the old one.
func NewSnapshot(zones []ZoneInput) (*Snapshot, error) {
	s := &Snapshot{zones: make(map[string]*zone, len(zones))}
	for _, in := range zones {
		z, err := buildZone(in)
		if err != nil {
			return nil, err
		}
		if _, dup := s.zones[z.origin]; dup {
			return nil, fmt.Errorf("dnsserver: zone %s defined twice", z.origin)
		}
		s.zones[z.origin] = z
	}
	return s, nil
}

// Zones returns the origins served by the snapshot, sorted.
func (s *Snapshot) Zones() []string {
	out := make([]string, 0, len(s.zones))
	for o := range s.zones {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

func buildZone(in ZoneInput) (*zone, error) {
	zn, err := records.NormalizeZone(in.Zone)
	if err != nil {
		return nil, fmt.Errorf("dnsserver: %w", err)
	}
	sets, err := records.ServedSets(zn, in.Sets)
	if err != nil {
		return nil, fmt.Errorf("dnsserver: zone %s: %w", zn.Name, err)
	}
	z := &zone{origin: zn.Name, nodes: map[string]*node{}, cuts: map[string]bool{}}
	z.soa = &dns.SOA{
		Hdr: dns.RR_Header{Name: zn.Name, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: uint32(zn.DefaultTTL)},
		Ns:  zn.MName, Mbox: zn.RName, Serial: zn.Serial,
		Refresh: zn.Refresh, Retry: zn.Retry, Expire: zn.Expire, Minttl: zn.Minimum,
	}
	neg := *z.soa
	neg.Hdr.Ttl = min(z.soa.Hdr.Ttl, z.soa.Minttl)
	z.negSOA = &neg
	z.add(z.soa)

	var all []dns.RR
	for _, set := range sets {
		ttl := zn.DefaultTTL
		if set.TTL != nil {
			ttl = *set.TTL
		}
		owner := zn.FQDN(set.Name)
		for _, v := range set.Records {
			rr, err := dns.NewRR(owner + " " + strconv.FormatInt(ttl, 10) + " IN " + set.Type + " " + v)
			if err != nil || rr == nil {
				return nil, fmt.Errorf("dnsserver: zone %s: %s %s %q: %v", zn.Name, set.Name, set.Type, v, err)
			}
			z.add(rr)
			all = append(all, rr)
		}
		if set.Type == "NS" && set.Name != "@" {
			z.cuts[owner] = true
		}
	}
	z.axfr = chunk(all)
	return z, nil
}

// add indexes rr at its owner and creates the empty non-terminals between
// the owner and the apex.
func (z *zone) add(rr dns.RR) {
	name := rr.Header().Name
	n := z.nodes[name]
	if n == nil {
		n = &node{sets: map[uint16][]dns.RR{}}
		z.nodes[name] = n
	}
	t := rr.Header().Rrtype
	if _, ok := n.sets[t]; !ok {
		n.types = append(n.types, t)
		slices.Sort(n.types)
	}
	n.sets[t] = append(n.sets[t], rr)
	for p := parent(name); p != "" && dns.IsSubDomain(z.origin, p) && z.nodes[p] == nil; p = parent(p) {
		z.nodes[p] = &node{sets: map[uint16][]dns.RR{}}
	}
}

// parent strips the leftmost label; "" above the root.
func parent(name string) string {
	if name == "." {
		return ""
	}
	i, end := dns.NextLabel(name, 0)
	if end {
		return "."
	}
	return name[i:]
}

// chunk splits AXFR records into groups of at most axfrChunkBytes on the wire.
func chunk(rrs []dns.RR) [][]dns.RR {
	var out [][]dns.RR
	var cur []dns.RR
	size := 0
	buf := make([]byte, dns.MaxMsgSize)
	for _, rr := range rrs {
		n, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			n = dns.MaxMsgSize / 4 // cannot happen for parsed RRs; give it a chunk of its own
		}
		if size+n > axfrChunkBytes && len(cur) > 0 {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, rr)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// findZone returns the zone with the longest origin containing qname.
func (s *Snapshot) findZone(qname string) *zone {
	if s == nil {
		return nil
	}
	for off, end := 0, false; !end; off, end = dns.NextLabel(qname, off) {
		if z, ok := s.zones[qname[off:]]; ok {
			return z
		}
	}
	return nil
}

// lowerName lower-cases an ASCII name, allocating only when needed.
func lowerName(n string) string {
	for i := 0; i < len(n); i++ {
		if c := n[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(n)
		}
	}
	return n
}
