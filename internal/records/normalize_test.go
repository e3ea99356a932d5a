package records

import (
	"errors"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ttl(v int64) *int64 { return &v }

func TestNormalizeSetValid(t *testing.T) {
	tests := []struct {
		name string
		in   RecordSet
		want RecordSet
	}{
		{"A sorted", RecordSet{Name: "WWW", Type: "a", Records: []string{"192.0.2.2", " 192.0.2.1 "}},
			RecordSet{Name: "www", Type: "A", Records: []string{"192.0.2.1", "192.0.2.2"}}},
		{"absolute name", RecordSet{Name: "www.Example.COM.", Type: "A", TTL: ttl(300), Records: []string{"192.0.2.1"}},
			RecordSet{Name: "www", Type: "A", TTL: ttl(300), Records: []string{"192.0.2.1"}}},
		{"apex absolute", RecordSet{Name: "example.com.", Type: "MX", Records: []string{"10 Mail"}},
			RecordSet{Name: "@", Type: "MX", Records: []string{"10 mail.example.com."}}},
		{"AAAA compressed", RecordSet{Name: "v6", Type: "AAAA", Records: []string{"2001:0DB8:0000::0001"}},
			RecordSet{Name: "v6", Type: "AAAA", Records: []string{"2001:db8::1"}}},
		{"CNAME absolute target", RecordSet{Name: "alias", Type: "CNAME", Records: []string{"Target.Example.NET."}},
			RecordSet{Name: "alias", Type: "CNAME", Records: []string{"target.example.net."}}},
		{"TXT free text keeps spaces", RecordSet{Name: "@", Type: "TXT", Records: []string{`v=spf1 a "x" ~all`}},
			RecordSet{Name: "@", Type: "TXT", Records: []string{`"v=spf1 a \"x\" ~all"`}}},
		{"TXT free text keeps semicolons", RecordSet{Name: "_dmarc", Type: "TXT", Records: []string{"v=DMARC1; p=none"}},
			RecordSet{Name: "_dmarc", Type: "TXT", Records: []string{`"v=DMARC1; p=none"`}}},
		{"TXT quoted with semicolon", RecordSet{Name: "_dmarc", Type: "TXT", Records: []string{`"v=DMARC1; p=none"`}},
			RecordSet{Name: "_dmarc", Type: "TXT", Records: []string{`"v=DMARC1; p=none"`}}},
		{"SRV", RecordSet{Name: "_sip._tcp", Type: "SRV", Records: []string{"10 60 5060 SIP"}},
			RecordSet{Name: "_sip._tcp", Type: "SRV", Records: []string{"10 60 5060 sip.example.com."}}},
		{"CAA tag lower", RecordSet{Name: "@", Type: "CAA", Records: []string{`0 ISSUE "letsencrypt.org"`}},
			RecordSet{Name: "@", Type: "CAA", Records: []string{`0 issue "letsencrypt.org"`}}},
		{"NS delegation", RecordSet{Name: "sub", Type: "NS", Records: []string{"ns1.sub"}},
			RecordSet{Name: "sub", Type: "NS", Records: []string{"ns1.sub.example.com."}}},
		{"PTR", RecordSet{Name: "1", Type: "PTR", Records: []string{"host.example.net."}},
			RecordSet{Name: "1", Type: "PTR", Records: []string{"host.example.net."}}},
		{"wildcard", RecordSet{Name: "*.apps", Type: "A", Records: []string{"192.0.2.9"}},
			RecordSet{Name: "*.apps", Type: "A", Records: []string{"192.0.2.9"}}},
		{"null MX", RecordSet{Name: "@", Type: "MX", Records: []string{"0 ."}},
			RecordSet{Name: "@", Type: "MX", Records: []string{"0 ."}}},
		{"ttl zero", RecordSet{Name: "x", Type: "A", TTL: ttl(0), Records: []string{"192.0.2.1"}},
			RecordSet{Name: "x", Type: "A", TTL: ttl(0), Records: []string{"192.0.2.1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeSet("Example.com", tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			again, err := NormalizeSet("example.com.", got)
			require.NoError(t, err)
			assert.Equal(t, got, again, "canonical form is a fixed point")
		})
	}
}

func TestNormalizeSetInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   RecordSet
		code string
		msg  string
	}{
		{"bad ipv4", RecordSet{Name: "www", Type: "A", Records: []string{"300.1.1.1"}}, "invalid_ipv4", `www A: "300.1.1.1" is not an IPv4 address`},
		{"ipv6 in A", RecordSet{Name: "www", Type: "A", Records: []string{"::1"}}, "invalid_ipv4", ""},
		{"ipv4 in AAAA", RecordSet{Name: "www", Type: "AAAA", Records: []string{"192.0.2.1"}}, "invalid_ipv6", ""},
		{"mapped in AAAA", RecordSet{Name: "www", Type: "AAAA", Records: []string{"::ffff:192.0.2.1"}}, "invalid_ipv6", ""},
		{"outside zone", RecordSet{Name: "www.example.org.", Type: "A", Records: []string{"192.0.2.1"}}, "name_outside_zone", ""},
		{"parent of zone", RecordSet{Name: "com.", Type: "A", Records: []string{"192.0.2.1"}}, "name_outside_zone", ""},
		{"bad label", RecordSet{Name: "a b", Type: "A", Records: []string{"192.0.2.1"}}, "invalid_name", ""},
		{"empty label", RecordSet{Name: "a..b", Type: "A", Records: []string{"192.0.2.1"}}, "invalid_name", ""},
		{"inner wildcard", RecordSet{Name: "a.*", Type: "A", Records: []string{"192.0.2.1"}}, "invalid_name", ""},
		{"no name", RecordSet{Type: "A", Records: []string{"192.0.2.1"}}, "name_required", ""},
		{"type", RecordSet{Name: "x", Type: "SOA", Records: []string{"a b 1 2 3 4 5"}}, "unsupported_type", ""},
		{"ttl negative", RecordSet{Name: "x", Type: "A", TTL: ttl(-1), Records: []string{"192.0.2.1"}}, "ttl_out_of_range", ""},
		{"ttl big", RecordSet{Name: "x", Type: "A", TTL: ttl(MaxTTL + 1), Records: []string{"192.0.2.1"}}, "ttl_out_of_range", ""},
		{"no records", RecordSet{Name: "x", Type: "A"}, "records_required", "x A: at least one record is required"},
		{"duplicate", RecordSet{Name: "x", Type: "AAAA", Records: []string{"2001:db8::1", "2001:DB8:0::1"}}, "duplicate_record", ""},
		{"two cnames", RecordSet{Name: "x", Type: "CNAME", Records: []string{"a.example.net.", "b.example.net."}}, "cname_multiple", ""},
		{"cname apex", RecordSet{Name: "@", Type: "CNAME", Records: []string{"a.example.net."}}, "cname_at_apex", ""},
		{"newline injection", RecordSet{Name: "x", Type: "TXT", Records: []string{"\"a\"\nevil IN A 192.0.2.66"}}, "control_character", ""},
		{"comment", RecordSet{Name: "x", Type: "MX", Records: []string{"10 mail ; x"}}, "comment_not_allowed", ""},
		{"parens", RecordSet{Name: "x", Type: "MX", Records: []string{"( 10 mail )"}}, "parenthesis_not_allowed", ""},
		{"quotes", RecordSet{Name: "x", Type: "TXT", Records: []string{`"abc`}}, "unbalanced_quotes", ""},
		{"mx garbage", RecordSet{Name: "x", Type: "MX", Records: []string{"mail"}}, "invalid_record", ""},
		{"mx extra", RecordSet{Name: "x", Type: "MX", Records: []string{"10 mail extra"}}, "invalid_record", ""},
		{"srv short", RecordSet{Name: "_s._tcp", Type: "SRV", Records: []string{"10 5060 sip"}}, "invalid_record", ""},
		{"caa bad", RecordSet{Name: "@", Type: "CAA", Records: []string{"issue letsencrypt.org"}}, "invalid_record", ""},
		{"generic type smuggle", RecordSet{Name: "x", Type: "A", Records: []string{`\# 4 c0000201`}}, "invalid_ipv4", ""},
		{"cname bad target", RecordSet{Name: "x", Type: "CNAME", Records: []string{"a..b"}}, "invalid_record", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NormalizeSet("example.com.", tt.in)
			require.Error(t, err)
			require.True(t, errors.Is(err, domain.ErrInvalid))
			var de *domain.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tt.code, de.Code, de.Message)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, de.Message)
			}
		})
	}
}

func TestNormalizeTemplateSet(t *testing.T) {
	got, err := NormalizeTemplateSet(RecordSet{Name: "@", Type: "mx", Records: []string{"10 Mail", "20 mx.example.net."}})
	require.NoError(t, err)
	assert.Equal(t, []string{"10 mail", "20 mx.example.net."}, got.Records)

	inZone, err := NormalizeSet("example.org.", got)
	require.NoError(t, err)
	assert.Equal(t, []string{"10 mail.example.org.", "20 mx.example.net."}, inZone.Records)

	apex, err := NormalizeTemplateSet(RecordSet{Name: "www", Type: "CNAME", Records: []string{"@"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"@"}, apex.Records)

	_, err = NormalizeTemplateSet(RecordSet{Name: "www.example.com.", Type: "A", Records: []string{"192.0.2.1"}})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "absolute_name", de.Code)
}

func TestNormalizeSetsList(t *testing.T) {
	_, err := NormalizeSets("example.com", []RecordSet{
		{Name: "www", Type: "CNAME", Records: []string{"x.example.net."}},
		{Name: "www", Type: "A", Records: []string{"192.0.2.1"}},
		{Name: "a", Type: "A", Records: []string{"192.0.2.1"}},
		{Name: "A", Type: "a", Records: []string{"192.0.2.2"}},
		{Name: "b", Type: "A", Records: []string{"nope"}},
	})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	msgs, ok := de.Details.([]string)
	require.True(t, ok)
	joined := strings.Join(msgs, "\n")
	assert.Contains(t, joined, "www CNAME: a CNAME cannot share")
	assert.Contains(t, joined, "a A: defined more than once")
	assert.Contains(t, joined, `b A: "nope" is not an IPv4 address`)

	ok2, err := NormalizeSets("example.com", []RecordSet{
		{Name: "www", Type: "A", Records: []string{"192.0.2.1"}},
		{Name: "@", Type: "MX", Records: []string{"10 mail"}},
	})
	require.NoError(t, err)
	assert.Equal(t, SetKey("@ MX"), ok2[0].Key())
}

// A value under the limit whose escaped form is over it (every byte above
// 0x7e becomes \DDD) is refused: the stored form must normalise again.
func TestEscapedValueOverLimitIsRefused(t *testing.T) {
	ttl := int64(300)
	in := RecordSet{Name: "x", Type: "TXT", TTL: &ttl, Records: []string{"e t" + strings.Repeat("\xa4", 2000)}}
	_, err := NormalizeSet("example.com.", in)
	if err == nil || !strings.Contains(err.Error(), "record_too_long") {
		t.Fatalf("want record_too_long, got %v", err)
	}
	in.Records = []string{strings.Repeat("\xa4", 1000)}
	out, err := NormalizeSet("example.com.", in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NormalizeSet("example.com.", out)
	if err != nil || !again.Equal(out) {
		t.Fatalf("not stable: %v", err)
	}
}
