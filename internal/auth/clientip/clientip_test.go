package clientip

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
)

func TestClientIP(t *testing.T) {
	tests := []struct {
		name       string
		remote     string
		xff        string
		trustProxy bool
		want       string // "" = invalid
	}{
		{"peer ipv4", "192.0.2.1:5555", "", false, "192.0.2.1"},
		{"peer ipv6", "[2001:db8::1]:5555", "", false, "2001:db8::1"},
		{"peer without port", "192.0.2.1", "", false, "192.0.2.1"},
		{"peer mapped", "[::ffff:192.0.2.1]:5555", "", false, "192.0.2.1"},
		{"peer zone dropped", "[fe80::1%eth0]:5555", "", false, "fe80::1"},
		{"xff ignored without trust", "10.0.0.5:443", "203.0.113.9", false, "10.0.0.5"},
		{"xff single", "10.0.0.5:443", "203.0.113.9", true, "203.0.113.9"},
		{"xff right-most wins", "10.0.0.5:443", "1.2.3.4, 198.51.100.2, 203.0.113.9", true, "203.0.113.9"},
		{"forged left entries ignored", "10.0.0.5:443", "127.0.0.1,203.0.113.9", true, "203.0.113.9"},
		{"xff spaces", "10.0.0.5:443", " 203.0.113.9 ", true, "203.0.113.9"},
		{"xff with port", "10.0.0.5:443", "203.0.113.9:4711", true, "203.0.113.9"},
		{"xff ipv6 with port", "10.0.0.5:443", "[2001:db8::7]:4711", true, "2001:db8::7"},
		{"xff ipv6 bracketed", "10.0.0.5:443", "[2001:db8::7]", true, "2001:db8::7"},
		{"xff mapped", "10.0.0.5:443", "::ffff:203.0.113.9", true, "203.0.113.9"},
		{"xff empty falls back", "10.0.0.5:443", "", true, "10.0.0.5"},
		{"xff garbage falls back", "10.0.0.5:443", "1.2.3.4, unknown", true, "10.0.0.5"},
		{"xff trailing comma falls back", "10.0.0.5:443", "203.0.113.9,", true, "10.0.0.5"},
		{"nothing parses", "@", "", false, ""},
		{"empty", "", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClientIP(tt.remote, tt.xff, tt.trustProxy)
			if tt.want == "" {
				assert.False(t, got.IsValid(), got.String())
				return
			}
			assert.Equal(t, netip.MustParseAddr(tt.want), got)
		})
	}
}

func TestParseAndAllows(t *testing.T) {
	l, err := Parse([]string{"localhost", " PRIVATE ", "192.0.2.7", "2001:db8::/32", "::ffff:198.51.100.0/120"})
	require.NoError(t, err)
	for addr, want := range map[string]bool{
		"127.0.0.1":        true,
		"127.255.0.9":      true,
		"::1":              true,
		"10.1.2.3":         true,
		"172.16.0.1":       true,
		"172.32.0.1":       false,
		"192.168.1.1":      true,
		"fd12::1":          true,
		"192.0.2.7":        true,
		"192.0.2.8":        false,
		"::ffff:192.0.2.7": true,
		"2001:db8:1::5":    true,
		"2001:db9::5":      false,
		"198.51.100.200":   true,
		"198.51.101.1":     false,
		"169.254.169.254":  false,
		"100.64.0.1":       false,
		"8.8.8.8":          false,
		"fe80::1%eth0":     false,
	} {
		assert.Equal(t, want, l.Allows(netip.MustParseAddr(addr)), addr)
	}
	assert.False(t, l.Allows(netip.Addr{}), "invalid address never allowed by a list")
}

func TestEmptyAllowsAll(t *testing.T) {
	for _, entries := range [][]string{nil, {}} {
		l, err := Parse(entries)
		require.NoError(t, err)
		assert.True(t, l.Empty())
		assert.True(t, l.Allows(netip.MustParseAddr("8.8.8.8")))
		assert.True(t, l.Allows(netip.Addr{}))
	}
	assert.True(t, Allowlist{}.Allows(netip.MustParseAddr("::1")))
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"", " ", "localhostx", "10.0.0.1/8", "10.0.0.0/33", "300.1.1.1", "fe80::1%eth0",
		"::ffff:10.0.0.0/8", "10.0.0.0/8/8", "10.0.0.*", "example.com", "1.2.3.4:80"} {
		t.Run(bad, func(t *testing.T) {
			_, err := Parse([]string{"10.0.0.0/8", bad})
			require.Error(t, err)
			assert.True(t, errors.Is(err, domain.ErrInvalid))
			var de *domain.Error
			require.True(t, errors.As(err, &de))
			assert.Equal(t, CodeInvalidAllowlist, de.Code)
			assert.Contains(t, de.Message, `"`+bad+`"`)
			assert.Equal(t, []string{bad}, de.Details)
		})
	}
	_, err := Parse([]string{"x", "10.0.0.0/8", "y"})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), `"x"`) && strings.Contains(err.Error(), `"y"`), "names every bad entry")
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"localhost", "private", "10.0.0.0/8", "::1", "::ffff:1.2.3.4", "::ffff:0.0.0.0/96", "x", "", "1.2.3.4/32"} {
		f.Add(s, "192.0.2.1")
	}
	f.Fuzz(func(t *testing.T, entry, addr string) {
		l, err := Parse([]string{entry})
		if err != nil {
			if !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if l.Empty() {
			t.Fatalf("entry %q parsed to nothing", entry)
		}
		for _, p := range l.Prefixes() {
			if !p.IsValid() || p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("entry %q gave unnormalised prefix %v", entry, p)
			}
		}
		// A single address entry allows itself, mapped or not.
		if a, err := netip.ParseAddr(strings.TrimSpace(entry)); err == nil {
			if !l.Allows(a) || !l.Allows(a.Unmap()) {
				t.Fatalf("entry %q does not allow itself", entry)
			}
		}
		got := ClientIP(addr, addr, true)
		if got.IsValid() && (got.Is4In6() || got.Zone() != "") {
			t.Fatalf("ClientIP(%q) = %v not normalised", addr, got)
		}
		_ = l.Allows(got)
	})
}
