package dnsserver

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestQueryPanicIsRecovered: miekg/dns answers every query in a goroutine
// of its own and recovers nothing. A query that makes the handler panic
// (here: a zone whose data is broken, so answering it dereferences what is
// not there) gets SERVFAIL over UDP and TCP, the panic is counted for the
// health monitor, and the listener answers the next query.
func TestQueryPanicIsRecovered(t *testing.T) {
	s := startServer(t, nil)
	good := s.Current()
	panics := testutil.CountPanics(t)
	s.Swap(&Snapshot{zones: map[string]*zone{"broken.test.": {}}})
	for i, network := range []string{"udp", "tcp"} {
		r := query(t, s, network, "www.broken.test.", dns.TypeA, true)
		if r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("%s: rcode %s, want SERVFAIL", network, dns.RcodeToString[r.Rcode])
		}
		if got := panics(); got != int64(i+1) {
			t.Fatalf("%s: %d panics counted, want %d", network, got, i+1)
		}
	}
	s.Swap(good)
	if r := query(t, s, "udp", "www.example.com.", dns.TypeA, true); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2 {
		t.Fatalf("after the panics: %s, %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
	}
}
