package dnsserver

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/records"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rs(name, typ string, recs ...string) records.ZoneSet {
	return records.ZoneSet{RecordSet: records.RecordSet{Name: name, Type: typ, Records: recs}}
}

func testZones(t testing.TB) []ZoneInput {
	t.Helper()
	ex := records.DefaultZone("example.com.", "ns1.example.com.", "hostmaster.example.com.")
	ex.Serial = 2026010101
	bigTXT := make([]string, 40)
	for i := range bigTXT {
		bigTXT[i] = fmt.Sprintf(`"%02d %s"`, i, strings.Repeat("x", 60))
	}
	return []ZoneInput{
		{Zone: ex, Sets: []records.ZoneSet{
			rs("@", "NS", "ns1.example.com.", "ns2.example.net."),
			rs("ns1", "A", "192.0.2.53"),
			rs("@", "A", "192.0.2.1"),
			rs("@", "MX", "10 mail.example.com."),
			rs("mail", "A", "192.0.2.25"),
			rs("mail", "AAAA", "2001:db8::25"),
			rs("www", "A", "192.0.2.80", "192.0.2.81"),
			rs("alias", "CNAME", "www.example.com."),
			rs("alias2", "CNAME", "alias.example.com."),
			rs("ext", "CNAME", "target.example.net."),
			rs("dangling", "CNAME", "missing.example.com."),
			rs("deep.empty.nonterminal", "TXT", `"x"`),
			rs("*.apps", "A", "192.0.2.90"),
			rs("sub", "NS", "ns.sub.example.com."),
			rs("ns.sub", "A", "192.0.2.99"),
			rs("big", "TXT", bigTXT...),
			{RecordSet: records.RecordSet{Name: "gone", Type: "A", Records: []string{}}, Origin: records.FromSource("s")},
		}},
		{Zone: func() records.Zone {
			z := records.DefaultZone("other.test.", "ns.other.test.", "h.other.test.")
			z.Serial = 7
			return z
		}(),
			Sets: []records.ZoneSet{rs("ns", "A", "192.0.2.7")}},
	}
}

func startServer(t testing.TB, allow []netip.Prefix) *Server {
	t.Helper()
	snap, err := NewSnapshot(testZones(t))
	require.NoError(t, err)
	s := New(Config{Addr: "127.0.0.1:0", AXFRAllow: allow})
	s.Swap(snap)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() {
		cancel()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = s.Shutdown(sctx)
	})
	return s
}

func query(t testing.TB, s *Server, net, name string, qtype uint16, edns bool) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	if edns {
		m.SetEdns0(4096, false)
	}
	c := &dns.Client{Net: net, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, s.Addr())
	require.NoError(t, err)
	return r
}

func rrStrings(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return out
}

func TestAnswers(t *testing.T) {
	s := startServer(t, nil)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		rcode   int
		aa      bool
		answer  []string
		ns      []string
		extra   []string
		nsTypes []uint16
	}{
		{name: "SOA at apex", qname: "example.com.", qtype: dns.TypeSOA, aa: true,
			answer: []string{"example.com. 3600 IN SOA ns1.example.com. hostmaster.example.com. 2026010101 86400 7200 3600000 3600"}},
		{name: "apex NS with glue", qname: "example.com.", qtype: dns.TypeNS, aa: true,
			answer: []string{"example.com. 3600 IN NS ns1.example.com.", "example.com. 3600 IN NS ns2.example.net."},
			extra:  []string{"ns1.example.com. 3600 IN A 192.0.2.53"}},
		{name: "A", qname: "WWW.Example.COM.", qtype: dns.TypeA, aa: true,
			answer: []string{"www.example.com. 3600 IN A 192.0.2.80", "www.example.com. 3600 IN A 192.0.2.81"}},
		{name: "AAAA", qname: "mail.example.com.", qtype: dns.TypeAAAA, aa: true,
			answer: []string{"mail.example.com. 3600 IN AAAA 2001:db8::25"}},
		{name: "MX with additional", qname: "example.com.", qtype: dns.TypeMX, aa: true,
			answer: []string{"example.com. 3600 IN MX 10 mail.example.com."},
			extra:  []string{"mail.example.com. 3600 IN A 192.0.2.25", "mail.example.com. 3600 IN AAAA 2001:db8::25"}},
		{name: "CNAME chase", qname: "alias2.example.com.", qtype: dns.TypeA, aa: true,
			answer: []string{"alias2.example.com. 3600 IN CNAME alias.example.com.", "alias.example.com. 3600 IN CNAME www.example.com.",
				"www.example.com. 3600 IN A 192.0.2.80", "www.example.com. 3600 IN A 192.0.2.81"}},
		{name: "CNAME asked directly", qname: "alias.example.com.", qtype: dns.TypeCNAME, aa: true,
			answer: []string{"alias.example.com. 3600 IN CNAME www.example.com."}},
		{name: "CNAME out of zone", qname: "ext.example.com.", qtype: dns.TypeA, aa: true,
			answer: []string{"ext.example.com. 3600 IN CNAME target.example.net."}},
		{name: "CNAME to missing name", qname: "dangling.example.com.", qtype: dns.TypeA, aa: true, rcode: dns.RcodeNameError,
			answer: []string{"dangling.example.com. 3600 IN CNAME missing.example.com."}, nsTypes: []uint16{dns.TypeSOA}},
		{name: "NXDOMAIN", qname: "nope.example.com.", qtype: dns.TypeA, aa: true, rcode: dns.RcodeNameError,
			ns: []string{"example.com. 3600 IN SOA ns1.example.com. hostmaster.example.com. 2026010101 86400 7200 3600000 3600"}},
		{name: "NODATA", qname: "www.example.com.", qtype: dns.TypeAAAA, aa: true, nsTypes: []uint16{dns.TypeSOA}},
		{name: "empty non-terminal is NODATA", qname: "empty.nonterminal.example.com.", qtype: dns.TypeA, aa: true, nsTypes: []uint16{dns.TypeSOA}},
		{name: "ENT parent", qname: "nonterminal.example.com.", qtype: dns.TypeTXT, aa: true, nsTypes: []uint16{dns.TypeSOA}},
		{name: "below a leaf is NXDOMAIN", qname: "x.www.example.com.", qtype: dns.TypeA, aa: true, rcode: dns.RcodeNameError, nsTypes: []uint16{dns.TypeSOA}},
		{name: "empty source-bound set", qname: "gone.example.com.", qtype: dns.TypeA, aa: true, rcode: dns.RcodeNameError, nsTypes: []uint16{dns.TypeSOA}},
		{name: "wildcard", qname: "shop.apps.example.com.", qtype: dns.TypeA, aa: true,
			answer: []string{"shop.apps.example.com. 3600 IN A 192.0.2.90"}},
		{name: "wildcard NODATA", qname: "shop.apps.example.com.", qtype: dns.TypeMX, aa: true, nsTypes: []uint16{dns.TypeSOA}},
		{name: "referral", qname: "host.sub.example.com.", qtype: dns.TypeA, aa: false,
			ns: []string{"sub.example.com. 3600 IN NS ns.sub.example.com."}, extra: []string{"ns.sub.example.com. 3600 IN A 192.0.2.99"}},
		{name: "ANY is one RRset", qname: "mail.example.com.", qtype: dns.TypeANY, aa: true,
			answer: []string{"mail.example.com. 3600 IN A 192.0.2.25"}},
		{name: "REFUSED outside zones", qname: "example.org.", qtype: dns.TypeA, rcode: dns.RcodeRefused},
		{name: "parent of a zone is REFUSED", qname: "com.", qtype: dns.TypeSOA, rcode: dns.RcodeRefused},
		{name: "second zone", qname: "other.test.", qtype: dns.TypeNS, aa: true,
			answer: []string{"other.test. 3600 IN NS ns.other.test."}, extra: []string{"ns.other.test. 3600 IN A 192.0.2.7"}},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				r := query(t, s, network, tt.qname, tt.qtype, true)
				assert.Equal(t, dns.RcodeToString[tt.rcode], dns.RcodeToString[r.Rcode])
				assert.Equal(t, tt.aa, r.Authoritative, "AA")
				assert.False(t, r.RecursionAvailable)
				assert.ElementsMatch(t, tt.answer, rrStrings(r.Answer))
				if tt.ns != nil {
					assert.ElementsMatch(t, tt.ns, rrStrings(r.Ns))
				}
				if tt.nsTypes != nil {
					require.Len(t, r.Ns, len(tt.nsTypes))
					assert.Equal(t, tt.nsTypes[0], r.Ns[0].Header().Rrtype)
				}
				var extra []string
				for _, rr := range r.Extra {
					if rr.Header().Rrtype != dns.TypeOPT {
						extra = append(extra, strings.ReplaceAll(rr.String(), "\t", " "))
					}
				}
				assert.ElementsMatch(t, tt.extra, extra)
				assert.NotNil(t, r.IsEdns0(), "EDNS answered with OPT")
			})
		}
	}
}

func TestNegativeTTL(t *testing.T) {
	in := testZones(t)
	in[0].Zone.Minimum = 60
	snap, err := NewSnapshot(in)
	require.NoError(t, err)
	s := startServer(t, nil)
	s.Swap(snap)
	r := query(t, s, "udp", "nope.example.com.", dns.TypeA, false)
	require.Len(t, r.Ns, 1)
	assert.Equal(t, uint32(60), r.Ns[0].Header().Ttl, "RFC 2308: min(SOA TTL, MINIMUM)")
}

func TestTruncation(t *testing.T) {
	s := startServer(t, nil)
	r := query(t, s, "udp", "big.example.com.", dns.TypeTXT, false)
	assert.True(t, r.Truncated, "no EDNS: 512 bytes")
	r = query(t, s, "udp", "big.example.com.", dns.TypeTXT, true)
	assert.True(t, r.Truncated, "EDNS: capped at 1232 bytes")
	r = query(t, s, "tcp", "big.example.com.", dns.TypeTXT, false)
	assert.False(t, r.Truncated)
	assert.Len(t, r.Answer, 40)
}

func TestEDNSBadVersion(t *testing.T) {
	s := startServer(t, nil)
	m := new(dns.Msg)
	m.SetQuestion("example.com.", dns.TypeSOA)
	m.SetEdns0(1232, false)
	m.IsEdns0().SetVersion(1)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, s.Addr())
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeBadVers, r.Rcode)
}

func axfr(t *testing.T, s *Server, zone string) ([]dns.RR, error) {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(zone)
	tr := &dns.Transfer{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second}
	ch, err := tr.In(m, s.Addr())
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return out, env.Error
		}
		out = append(out, env.RR...)
	}
	return out, nil
}

func TestAXFR(t *testing.T) {
	allowed := startServer(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	rrs, err := axfr(t, allowed, "example.com.")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rrs), 3)
	assert.Equal(t, dns.TypeSOA, rrs[0].Header().Rrtype)
	assert.Equal(t, dns.TypeSOA, rrs[len(rrs)-1].Header().Rrtype)
	assert.Len(t, rrs, 2+2+1+1+1+1+1+2+1+1+1+1+1+1+1+40+1, "SOA + every record + SOA") // sets above, plus ns.sub

	_, err = axfr(t, allowed, "www.example.com.")
	assert.Error(t, err, "not a zone apex")

	r := query(t, allowed, "udp", "example.com.", dns.TypeAXFR, false)
	assert.Equal(t, dns.RcodeRefused, r.Rcode, "never over UDP")

	refused := startServer(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	_, err = axfr(t, refused, "example.com.")
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("rcode: %d", dns.RcodeRefused))
}

func TestSwapVisibleImmediately(t *testing.T) {
	s := startServer(t, nil)
	r := query(t, s, "udp", "new.example.com.", dns.TypeA, false)
	assert.Equal(t, dns.RcodeNameError, r.Rcode)

	in := testZones(t)
	in[0].Sets = append(in[0].Sets, rs("new", "A", "192.0.2.200"))
	in[0].Zone.Serial++
	snap, err := NewSnapshot(in)
	require.NoError(t, err)
	s.Swap(snap)
	r = query(t, s, "udp", "new.example.com.", dns.TypeA, false)
	assert.Equal(t, []string{"new.example.com. 3600 IN A 192.0.2.200"}, rrStrings(r.Answer))

	s.Swap(nil)
	r = query(t, s, "udp", "new.example.com.", dns.TypeA, false)
	assert.Equal(t, dns.RcodeRefused, r.Rcode)
}

func TestNewSnapshotRejectsBadData(t *testing.T) {
	in := testZones(t)
	in[0].Sets = append(in[0].Sets, rs("bad", "A", "300.1.1.1"))
	_, err := NewSnapshot(in)
	assert.ErrorContains(t, err, `bad A: "300.1.1.1" is not an IPv4 address`)

	_, err = NewSnapshot([]ZoneInput{testZones(t)[1], testZones(t)[1]})
	assert.ErrorContains(t, err, "defined twice")
}
