package records

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourceSets(t *testing.T) {
	a, aaaa, err := SourceSets([]string{"192.0.2.2", "192.0.2.1", "192.0.2.2"}, []string{"2001:DB8::0:1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, a)
	assert.Equal(t, []string{"2001:db8::1"}, aaaa)

	a, aaaa, err = SourceSets(nil, nil)
	require.NoError(t, err)
	assert.NotNil(t, a)
	assert.NotNil(t, aaaa)

	_, _, err = SourceSets([]string{"192.0.2.1", "2001:db8::1"}, nil)
	assert.ErrorContains(t, err, `ipv4[1]: "2001:db8::1" is not an IPv4 address`)
	_, _, err = SourceSets(nil, []string{"::ffff:192.0.2.1"})
	assert.ErrorContains(t, err, "ipv6[0]")
}

func TestPropagate(t *testing.T) {
	sets := []ZoneSet{
		zs(set("web", "A", "192.0.2.1"), FromSource("s")),
		zs(set("web", "AAAA", "2001:db8::1"), FromSource("s")),
		zs(set("other", "A", "192.0.2.1"), FromSource("t")),
		zs(set("man", "A", "192.0.2.1"), Manual()),
	}
	changed := Propagate("s", []string{"192.0.2.9"}, nil, sets)
	require.Len(t, changed, 2)
	assert.Equal(t, []string{"192.0.2.9"}, changed[0].Records)
	assert.Equal(t, []string{}, changed[1].Records, "AAAA binding keeps the set with no records")
	assert.Equal(t, []string{"2001:db8::1"}, sets[1].Records, "input untouched")

	assert.Empty(t, Propagate("s", []string{"192.0.2.1"}, []string{"2001:db8::1"}, sets), "no change, nothing to write")

	// A propagated set equals the same set normalized by hand.
	a, _, err := SourceSets([]string{"192.0.2.10", "192.0.2.9"}, nil)
	require.NoError(t, err)
	p := Propagate("s", a, nil, sets)[0]
	n, err := NormalizeSet("example.com.", set("web", "A", "192.0.2.9", "192.0.2.10"))
	require.NoError(t, err)
	assert.True(t, p.SameContent(n))
}

func TestNextSerial(t *testing.T) {
	day := time.Date(2026, 3, 14, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		old  uint32
		want uint32
	}{
		{"fresh zone", 0, 2026031400},
		{"older day", 2026031307, 2026031400},
		{"same day", 2026031400, 2026031401},
		{"day exhausted", 2026031499, 2026031500},
		{"ahead of date", 2027010100, 2027010101},
		{"unix time style", 4000000000, 4000000001},
		{"wraps", 4294967295, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NextSerial(tt.old, day))
		})
	}
	// Serials always increase in RFC 1982 terms.
	s := uint32(4294967290)
	for range 20 {
		n := NextSerial(s, day)
		assert.True(t, int32(n-s) > 0, "%d -> %d", s, n)
		s = n
	}
}
