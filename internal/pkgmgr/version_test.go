package pkgmgr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// rpmVerCmpCases come from rpm's own test suite (tests/rpmvercmp.at).
var rpmVerCmpCases = []struct {
	a, b string
	want int
}{
	{"1.0", "1.0", 0}, {"1.0", "2.0", -1}, {"2.0", "1.0", 1},
	{"2.0.1", "2.0.1", 0}, {"2.0", "2.0.1", -1}, {"2.0.1", "2.0", 1},
	{"2.0.1a", "2.0.1a", 0}, {"2.0.1a", "2.0.1", 1}, {"2.0.1", "2.0.1a", -1},
	{"5.5p1", "5.5p1", 0}, {"5.5p1", "5.5p2", -1}, {"5.5p2", "5.5p1", 1},
	{"5.5p10", "5.5p10", 0}, {"5.5p1", "5.5p10", -1}, {"5.5p10", "5.5p1", 1},
	{"10xyz", "10.1xyz", -1}, {"10.1xyz", "10xyz", 1},
	{"xyz10", "xyz10", 0}, {"xyz10", "xyz10.1", -1}, {"xyz10.1", "xyz10", 1},
	{"xyz.4", "xyz.4", 0}, {"xyz.4", "8", -1}, {"8", "xyz.4", 1}, {"xyz.4", "2", -1}, {"2", "xyz.4", 1},
	{"5.5p2", "5.6p1", -1}, {"5.6p1", "5.5p2", 1},
	{"5.6p1", "6.5p1", -1}, {"6.5p1", "5.6p1", 1},
	{"6.0.rc1", "6.0", 1}, {"6.0", "6.0.rc1", -1},
	{"10b2", "10a1", 1}, {"10a2", "10b2", -1},
	{"1.0aa", "1.0aa", 0}, {"1.0a", "1.0aa", -1}, {"1.0aa", "1.0a", 1},
	{"10.0001", "10.0001", 0}, {"10.0001", "10.1", 0}, {"10.1", "10.0001", 0},
	{"10.0001", "10.0039", -1}, {"10.0039", "10.0001", 1},
	{"4.999.9", "5.0", -1}, {"5.0", "4.999.9", 1},
	{"20101121", "20101121", 0}, {"20101121", "20101122", -1}, {"20101122", "20101121", 1},
	{"2_0", "2_0", 0}, {"2.0", "2_0", 0}, {"2_0", "2.0", 0},
	{"a", "a", 0}, {"a+", "a+", 0}, {"a+", "a_", 0}, {"a_", "a+", 0},
	{"+a", "+a", 0}, {"+a", "_a", 0}, {"_a", "+a", 0},
	{"+_", "+_", 0}, {"_+", "+_", 0}, {"_+", "_+", 0},
	{"+", "_", 0}, {"_", "+", 0},
	{"1.0~rc1", "1.0~rc1", 0}, {"1.0~rc1", "1.0", -1}, {"1.0", "1.0~rc1", 1},
	{"1.0~rc1", "1.0~rc2", -1}, {"1.0~rc2", "1.0~rc1", 1},
	{"1.0~rc1~git123", "1.0~rc1~git123", 0}, {"1.0~rc1~git123", "1.0~rc1", -1}, {"1.0~rc1", "1.0~rc1~git123", 1},
	{"1.0^", "1.0^", 0}, {"1.0^", "1.0", 1}, {"1.0", "1.0^", -1},
	{"1.0^git1", "1.0^git1", 0}, {"1.0^git1", "1.0", 1}, {"1.0", "1.0^git1", -1},
	{"1.0^git1", "1.0^git2", -1}, {"1.0^git2", "1.0^git1", 1},
	{"1.0^git1", "1.01", -1}, {"1.01", "1.0^git1", 1},
	{"1.0^20160101", "1.0^20160101", 0}, {"1.0^20160101", "1.0.1", -1}, {"1.0.1", "1.0^20160101", 1},
	{"1.0^20160101^git1", "1.0^20160101^git1", 0}, {"1.0^20160102", "1.0^20160101^git1", 1},
	{"1.0^20160101^git1", "1.0^20160102", -1},
	{"1.0~rc1^git1", "1.0~rc1^git1", 0}, {"1.0~rc1^git1", "1.0~rc1", 1}, {"1.0~rc1", "1.0~rc1^git1", -1},
	{"1.0^git1~pre", "1.0^git1~pre", 0}, {"1.0^git1", "1.0^git1~pre", 1}, {"1.0^git1~pre", "1.0^git1", -1},
	{"1.900", "1.8000", -1}, {"1.8000", "1.900", 1},
}

func TestRPMVerCmp(t *testing.T) {
	for _, tc := range rpmVerCmpCases {
		require.Equal(t, tc.want, CompareRPM(tc.a, tc.b), "rpmvercmp(%q, %q)", tc.a, tc.b)
	}
}

func TestCompareRPM(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1:3.0.7-27.el9", "3.0.8-1.el9", 1}, // epoch wins
		{"(none):1.0-1", "1.0-1", 0},
		{"0:1.0-1", "1.0-1", 0},
		{"5.14.0-427.13.1.el9_4", "5.14.0-427.16.1.el9_4", -1},
		{"2:4.9-8.el9", "2:4.9-8.el9_4.1", -1},
		{"1.0", "1.0-5", -1}, // a missing release sorts first, as in rpm's own EVR comparison
		{"6.1.0-35-amd64", "6.1.0-9-amd64", 1},
		{"99999999999999999999999:1", "1:2", -1}, // an epoch that overflows reads as 0: no panic
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, CompareRPM(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
	}
}

func TestCompareDeb(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"5.2.15-2+b8", "5.2.15-2+b13", -1},
		{"1.0~rc1-1", "1.0-1", -1},
		{"1:1.0-1", "2.0-1", 1},
		{"12.4+deb12u11", "12.4+deb12u15", -1},
		{"3.0.15-1~deb12u1", "3.0.15-1", -1},
		{"1.0", "1.0", 0},
		{"not a version!", "1.0", 1}, // invalid: byte order, no panic
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, CompareDeb(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
	}
}

func TestCompareAPK(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.36.1-r15", "1.36.1-r19", -1},
		{"1.2.4_git20230717-r4", "1.2.4-r4", 1},
		{"1.0_rc1-r0", "1.0-r0", -1},
		{"1.0_alpha1", "1.0_beta1", -1},
		{"9.6_p1-r0", "9.6-r0", 1},
		{"1.2a-r0", "1.2-r0", 1},
		{"1.10-r0", "1.9-r0", 1},
		{"3.1.4-r5", "3.1.5-r0", -1},
		{"2.0-r0", "2.0-r0", 0},
		{"1.2.3_rc1_p2-r4", "1.2.3_rc1-r4", 1},
		{"0.1.0_alpha", "0.1.3_alpha", -1},
		{"1.0_pre1", "1.0_rc1", -1},
		{"1.0_cvs1", "1.0_svn1", -1},
		{"1.0_git1", "1.0_hg1", -1},
		{"1.0_hg1", "1.0_p1", -1},
		{"1.0a-r0", "1.0b-r0", -1},
		{"1.0-r10", "1.0-r9", 1},
		{"not a version", "1.0-r0", 1}, // invalid: byte order, no panic
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, CompareAPK(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
		require.Equal(t, -tc.want, CompareAPK(tc.b, tc.a), "%q vs %q", tc.b, tc.a)
	}
}

func TestManagersCompare(t *testing.T) {
	require.Negative(t, APT{}.Compare("1.0-1", "1.0-2"))
	require.Negative(t, NewDNF("dnf").Compare("1.0-1.el9", "1.0-2.el9"))
	require.Negative(t, Zypper{}.Compare("1.0-1.1", "1.0-1.2"))
	require.Negative(t, Pacman{}.Compare("6.8.9.arch1-1", "6.9.1.arch1-1"))
	require.Negative(t, APK{}.Compare("1.0-r0", "1.0-r1"))
}

func TestFamilyFromOSRelease(t *testing.T) {
	tests := []struct {
		id   string
		like []string
		want Family
	}{
		{"debian", nil, FamilyAPT},
		{"ubuntu", []string{"debian"}, FamilyAPT},
		{"linuxmint", []string{"ubuntu", "debian"}, FamilyAPT},
		{"rhel", []string{"fedora"}, FamilyDNF},
		{"rocky", []string{"rhel", "centos", "fedora"}, FamilyDNF},
		{"amzn", []string{"centos", "rhel", "fedora"}, FamilyDNF},
		{"fedora", nil, FamilyDNF},
		{"opensuse-leap", []string{"suse", "opensuse"}, FamilyZypper},
		{"sles", nil, FamilyZypper},
		{"arch", nil, FamilyPacman},
		{"manjaro", []string{"arch"}, FamilyPacman},
		{"alpine", nil, FamilyAPK},
		{"UBUNTU", nil, FamilyAPT},
		{"someclone", []string{"rhel"}, FamilyDNF},
	}
	for _, tc := range tests {
		got, err := FamilyFromOSRelease(tc.id, tc.like)
		require.NoError(t, err, tc.id)
		require.Equal(t, tc.want, got, tc.id)
	}
	_, err := FamilyFromOSRelease("gentoo", nil)
	require.Error(t, err)
}
