package pkgmgr

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
)

// parserCases lists every parser with its recorded input; the golden output
// is testdata/<input>.golden.json.
var parserCases = []struct {
	input string
	parse func([]byte) (any, error)
}{
	{"apt_dpkg_query.txt", func(b []byte) (any, error) { return ParseDpkgQuery(b) }},
	{"apt_simulate_upgrade.txt", func(b []byte) (any, error) { return ParseAptSimulate(b) }},
	{"apt_simulate_dist_upgrade.txt", func(b []byte) (any, error) { return ParseAptSimulate(b) }},
	{"apt_list_upgradable.txt", func(b []byte) (any, error) { return ParseAptList(b) }},
	{"apt_policy_held.txt", func(b []byte) (any, error) { return ParseAptPolicy(b) }},
	{"dnf_rpm_qa.txt", func(b []byte) (any, error) { return ParseRPMQuery(b, "dnf") }},
	{"dnf_list_upgradable.txt", func(b []byte) (any, error) { return NewDNF("dnf").ParseUpgradable(b) }},
	{"dnf5_updateinfo.txt", func(b []byte) (any, error) { return ParseDNFUpdateinfo(b) }},
	{"zypper_list_upgradable.txt", func(b []byte) (any, error) { return Zypper{}.ParseUpgradable(b) }},
	{"pacman_local_desc.txt", func(b []byte) (any, error) { return ParsePacmanLocalDB(b) }},
	{"pacman_qu.txt", func(b []byte) (any, error) { return ParsePacmanQu(b) }},
	{"apk_list_installed.txt", func(b []byte) (any, error) { return ParseAPKList(b) }},
	{"apk_info_v.txt", func(b []byte) (any, error) { return ParseAPKList(b) }},
	{"apk_list_upgradable.txt", func(b []byte) (any, error) { return ParseAPKListUpgradable(b) }},
	{"apk_version.txt", func(b []byte) (any, error) { return ParseAPKVersion(b) }},
}

func TestParsersGolden(t *testing.T) {
	for _, tc := range parserCases {
		t.Run(tc.input, func(t *testing.T) {
			got, err := tc.parse(readTestdata(t, tc.input))
			require.NoError(t, err)
			golden(t, strings.TrimSuffix(tc.input, ".txt")+".golden.json", got)
		})
	}
}

func TestParseDpkgQueryRecorded(t *testing.T) {
	pkgs, err := ParseDpkgQuery(readTestdata(t, "apt_dpkg_query.txt"))
	require.NoError(t, err)
	require.Greater(t, len(pkgs), 500)
	byName := map[string]Package{}
	for _, p := range pkgs {
		byName[p.Name+":"+p.Arch] = p
	}
	// amqp-tools is built from librabbitmq: source differs from name.
	require.Equal(t, "librabbitmq", byName["amqp-tools:amd64"].Source)
	require.Equal(t, "apt", byName["amqp-tools:amd64"].Manager)
}

func TestParseAptSimulateSecurity(t *testing.T) {
	ups, err := ParseAptSimulate(readTestdata(t, "apt_simulate_dist_upgrade.txt"))
	require.NoError(t, err)
	list, err := ParseAptList(readTestdata(t, "apt_list_upgradable.txt"))
	require.NoError(t, err)
	// Both listings of the same host agree on names, versions and security.
	require.Len(t, ups, len(list))
	sim := map[string]Upgradable{}
	for _, u := range ups {
		sim[u.Name+":"+u.Arch] = u
	}
	for _, l := range list {
		s, ok := sim[l.Name+":"+l.Arch]
		require.True(t, ok, l.Name)
		require.Equal(t, l, s, l.Name)
	}
}

func TestParseAptSimulateLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Upgradable
	}{
		{"ubuntu security", "Inst libssl3 [3.0.2-0ubuntu1.14] (3.0.2-0ubuntu1.15 Ubuntu:22.04/jammy-updates, Ubuntu:22.04/jammy-security [amd64])",
			[]Upgradable{{Name: "libssl3", Current: "3.0.2-0ubuntu1.14", Candidate: "3.0.2-0ubuntu1.15", Arch: "amd64", Security: true}}},
		{"debian 10 label only", "Inst openssl [1.1.1n-0+deb10u5] (1.1.1n-0+deb10u6 Debian-Security:10/oldoldstable [amd64])",
			[]Upgradable{{Name: "openssl", Current: "1.1.1n-0+deb10u5", Candidate: "1.1.1n-0+deb10u6", Arch: "amd64", Security: true}}},
		{"not security look-alike", "Inst foo [1.0] (1.1 my-security-tools:1/stable-securityish [all])",
			[]Upgradable{{Name: "foo", Current: "1.0", Candidate: "1.1", Arch: "all"}}},
		{"multiarch", "Inst libc6:i386 [2.36-9] (2.36-9+deb12u1 Debian:12.5/stable [i386])",
			[]Upgradable{{Name: "libc6", Current: "2.36-9", Candidate: "2.36-9+deb12u1", Arch: "i386"}}},
		{"new dependency skipped", "Inst linux-image-6.1.0-35-amd64 (6.1.137-1 Debian-Security:12/stable-security [amd64])", nil},
		{"conf and remv ignored", "Conf bash (5.2 Debian:12/stable [amd64])\nRemv foo [1.0]", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAptSimulate([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParsersReportBadLines(t *testing.T) {
	pkgs, err := ParseDpkgQuery([]byte("bash\t5.2\tamd64\tbash\tii \ngarbage line\n"))
	require.Len(t, pkgs, 1)
	var le *LineError
	require.True(t, errors.As(err, &le))
	require.Equal(t, 1, le.Count)
	require.ErrorIs(t, err, domain.ErrInvalid)

	_, err = ParseZypperUpdates([]byte("<stream><update-list><update kind='package' name='x'"))
	require.ErrorIs(t, err, domain.ErrInvalid)
}

func TestParseDpkgQuerySkipsRemoved(t *testing.T) {
	pkgs, err := ParseDpkgQuery([]byte("a\t1\tamd64\ta\tii \nb\t1\tamd64\tb\trc \nc\t\tamd64\tc\tun \nd\t1\tall\td\tiF \n"))
	require.NoError(t, err)
	require.Len(t, pkgs, 2)
	require.Equal(t, "d", pkgs[1].Name)
}

func TestFillCurrent(t *testing.T) {
	installed, err := ParseRPMQuery(readTestdata(t, "dnf_rpm_qa.txt"), "dnf")
	require.NoError(t, err)
	ups, err := NewDNF("dnf").ParseUpgradable(readTestdata(t, "dnf_list_upgradable.txt"))
	require.NoError(t, err)
	FillCurrent(ups, installed)
	for _, u := range ups {
		require.NotEmpty(t, u.Current, u.Name)
		require.Negative(t, CompareRPM(u.Current, u.Candidate), u.Name)
	}
}

// TestPacmanListInstalledScript runs ListInstalled's shell script against
// a local database laid out as libalpm keeps it (one directory per
// package, each with a desc file), found through pacman-conf.
func TestPacmanListInstalledScript(t *testing.T) {
	dir := t.TempDir()
	recs := strings.Split(strings.TrimSuffix(string(readTestdata(t, "pacman_local_desc.txt")), "%END%\n"), "%END%\n")
	for i, r := range recs {
		d := filepath.Join(dir, "db", "local", fmt.Sprintf("pkg%d-1.0-1", i))
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "desc"), []byte(r), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db", "local", "ALPM_DB_VERSION"), []byte("9\n"), 0o644))
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pacman-conf"), []byte("#!/bin/sh\necho "+filepath.Join(dir, "db")+"/\n"), 0o755))
	cmd := exec.Command("sh", "-c", Pacman{}.ListInstalled())
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	require.NoError(t, err)
	got, err := Pacman{}.ParseInstalled(out)
	require.NoError(t, err)
	want, err := ParsePacmanLocalDB(readTestdata(t, "pacman_local_desc.txt"))
	require.NoError(t, err)
	require.ElementsMatch(t, want, got)
}

func TestParseListsAgeRecorded(t *testing.T) {
	a, err := ParseListsAge(readTestdata(t, "apt_lists_age.txt"))
	require.NoError(t, err)
	require.Equal(t, 3, a.Files)
	require.Equal(t, int64(1795529059), a.Now.Unix())
	require.Equal(t, int64(1795528636), a.Newest.Unix())
	require.Equal(t, int64(1795528600), a.Oldest.Unix())
	require.Equal(t, 423*time.Second, a.Age())
}
