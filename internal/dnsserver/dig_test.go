package dnsserver

import (
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dig runs the real dig against s and returns its output.
func dig(t *testing.T, s *Server, args ...string) string {
	t.Helper()
	bin := testutil.RequireTool(t, "dig")
	host, port, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	all := append([]string{"@" + host, "-p", port, "+norec", "+time=3", "+tries=1"}, args...)
	out, err := exec.Command(bin, all...).CombinedOutput()
	require.NoError(t, err, "dig %v:\n%s", all, out)
	return string(out)
}

func TestDig(t *testing.T) {
	s := startServer(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	tests := []struct {
		name     string
		args     []string
		contains []string
		absent   []string
	}{
		{"SOA", []string{"example.com.", "SOA"}, []string{"status: NOERROR", "flags: qr aa;", "IN\tSOA\tns1.example.com. hostmaster.example.com. 2026010101"}, nil},
		{"A", []string{"www.example.com.", "A"}, []string{"status: NOERROR", "flags: qr aa;", "192.0.2.80", "192.0.2.81"}, nil},
		{"AAAA over TCP", []string{"+tcp", "mail.example.com.", "AAAA"}, []string{"status: NOERROR", "2001:db8::25"}, nil},
		{"MX", []string{"example.com.", "MX"}, []string{"10 mail.example.com.", "ADDITIONAL SECTION", "192.0.2.25"}, nil},
		{"CNAME chase", []string{"alias.example.com.", "A"}, []string{"CNAME\twww.example.com.", "192.0.2.80"}, nil},
		{"NXDOMAIN", []string{"nope.example.com.", "A"}, []string{"status: NXDOMAIN", "flags: qr aa;", "AUTHORITY SECTION", "IN\tSOA"}, nil},
		{"NODATA", []string{"www.example.com.", "TXT"}, []string{"status: NOERROR", "ANSWER: 0", "AUTHORITY: 1", "IN\tSOA"}, nil},
		{"empty non-terminal", []string{"nonterminal.example.com.", "A"}, []string{"status: NOERROR", "ANSWER: 0", "AUTHORITY: 1"}, nil},
		{"REFUSED", []string{"example.org.", "A"}, []string{"status: REFUSED"}, []string{"flags: qr aa"}},
		{"no EDNS truncated", []string{"+noedns", "+ignore", "big.example.com.", "TXT"}, []string{"flags: qr aa tc;"}, nil},
		{"AXFR", []string{"AXFR", "example.com."}, []string{"XFR size: 59 records"}, []string{"Transfer failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := dig(t, s, tt.args...)
			for _, c := range tt.contains {
				assert.Contains(t, out, c)
			}
			for _, c := range tt.absent {
				assert.NotContains(t, out, c)
			}
		})
	}
	// The AXFR output starts and ends with the SOA.
	lines := strings.Split(strings.TrimSpace(dig(t, s, "+noall", "+answer", "AXFR", "example.com.")), "\n")
	assert.Contains(t, lines[0], "\tSOA\t")
	assert.Contains(t, lines[len(lines)-1], "\tSOA\t")
}

func TestDigAXFRRefused(t *testing.T) {
	s := startServer(t, nil)
	out := dig(t, s, "AXFR", "example.com.")
	assert.Contains(t, out, "Transfer failed")
}
