package records

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testZone(name string) Zone {
	z := DefaultZone(name, "ns1.lcm-dns.example.net.", "hostmaster@"+strings.TrimSuffix(name, "."))
	z.Serial = 2026010101
	return z
}

func zoneFixtures(t *testing.T) map[string][]ZoneSet {
	t.Helper()
	return map[string][]ZoneSet{
		"example.com.": {
			zs(set("@", "NS", "ns1.example.com.", "ns2.example.net."), Manual()),
			zs(set("ns1", "A", "192.0.2.53"), Manual()),
			zs(set("@", "A", "192.0.2.1"), Manual()),
			zs(set("@", "MX", "10 mail.example.com.", "20 mx.example.net."), FromSyncGroup("g")),
			zs(set("mail", "A", "192.0.2.25"), Manual()),
			zs(RecordSet{Name: "www", Type: "CNAME", TTL: ttl(60), Records: []string{"example.com."}}, Manual()),
			zs(set("@", "TXT", `"v=spf1 mx -all"`, `"long `+strings.Repeat("x", 300)+`"`), FromTemplate("t")),
			zs(set("_sip._tcp", "SRV", "10 60 5060 sip.example.net."), Manual()),
			zs(set("@", "CAA", `0 issue "letsencrypt.org"`), Manual()),
			zs(set("v6", "AAAA", "2001:db8::1"), FromSource("s")),
			zs(set("v4", "A"), FromSource("s")), // empty: left out
			zs(set("*.apps", "A", "192.0.2.80"), Manual()),
			zs(set("deep.empty.nonterminal", "TXT", `"x"`), Manual()),
		},
		"2.0.192.in-addr.arpa.": {
			zs(set("1", "PTR", "host.example.com."), Manual()),
			zs(set("53", "PTR", "ns1.example.com."), Manual()),
		},
		"minimal.test.": {}, // NS synthesised from MNAME
		"delegating.test.": {
			zs(set("sub", "NS", "ns.sub.delegating.test."), Manual()),
			zs(set("ns.sub", "A", "192.0.2.99"), Manual()), // glue
		},
	}
}

func TestZoneFileNamedCheckzone(t *testing.T) {
	checkzone := testutil.RequireTool(t, "named-checkzone")
	for origin, sets := range zoneFixtures(t) {
		t.Run(origin, func(t *testing.T) {
			out, err := ZoneFile(testZone(origin), sets)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "zone")
			require.NoError(t, os.WriteFile(path, out, 0o600))
			res, err := exec.Command(checkzone, "-k", "fail", "-n", "fail", "-i", "full", origin, path).CombinedOutput()
			require.NoError(t, err, "named-checkzone rejected:\n%s\n%s", res, out)
			assert.Contains(t, string(res), "OK")
		})
	}
}

func TestZoneFileShape(t *testing.T) {
	out, err := ZoneFile(testZone("example.com"), zoneFixtures(t)["example.com."])
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	assert.Equal(t, "$ORIGIN example.com.", lines[1])
	assert.Equal(t, "$TTL 3600", lines[2])
	assert.Equal(t, "@\tIN\tSOA\tns1.lcm-dns.example.net. hostmaster.example.com. 2026010101 86400 7200 3600000 3600", lines[3])
	assert.Equal(t, "@\t\tIN\tNS\tns1.example.com.", lines[4])
	assert.Contains(t, string(out), "www\t60\tIN\tCNAME\texample.com.\n")
	assert.NotContains(t, string(out), "v4\t")

	minimal, err := ZoneFile(testZone("minimal.test."), nil)
	require.NoError(t, err)
	assert.Contains(t, string(minimal), "@\t\tIN\tNS\tns1.lcm-dns.example.net.\n")
}

func TestZoneFileRefusesBadData(t *testing.T) {
	_, err := ZoneFile(testZone("example.com."), []ZoneSet{zs(set("x", "TXT", "\"a\"\nevil IN A 192.0.2.1"), Manual())})
	require.Error(t, err)
	_, err = ZoneFile(Zone{Name: "example.com."}, nil)
	require.Error(t, err)
}
