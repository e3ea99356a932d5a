package pkgmgr

import (
	"bytes"
	"testing"
)

// addSeeds seeds a fuzz target with recorded outputs and edge cases.
func addSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		f.Add(readTestdata(f, name))
	}
	for _, s := range []string{"", "\n", "\t\t\t\t", "Inst ", "Inst a [", "Inst a [1] (", "a-r", "-r1", "x -> ", "<update", "==lcm:section x=="} {
		f.Add([]byte(s))
	}
}

func FuzzParseDpkg(f *testing.F) {
	addSeeds(f, "apt_dpkg_query.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseDpkgQuery(b) })
}

func FuzzParseAptSimulate(f *testing.F) {
	addSeeds(f, "apt_simulate_upgrade.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		ups, _ := ParseAptSimulate(b)
		for _, u := range ups {
			if u.Name == "" || u.Candidate == "" || u.Current == "" {
				t.Fatalf("incomplete record %+v", u)
			}
		}
	})
}

func FuzzParseAptList(f *testing.F) {
	addSeeds(f, "apt_list_upgradable.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseAptList(b) })
}

func FuzzParseAptPolicy(f *testing.F) {
	addSeeds(f, "apt_policy_held.txt")
	f.Add([]byte("a:\n  Installed: 1\n  Candidate: 2\n *** 2 500\n        500 x y-security/main\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ups, _ := ParseAptPolicy(b)
		for _, u := range ups {
			if u.Name == "" || u.Current == "" || u.Candidate == "" || u.Current == u.Candidate {
				t.Fatalf("bad record %+v", u)
			}
		}
	})
}

func FuzzParseRPM(f *testing.F) {
	addSeeds(f, "dnf_rpm_qa.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseRPMQuery(b, "dnf") })
}

func FuzzParseDNFUpgradable(f *testing.F) {
	addSeeds(f, "dnf_list_upgradable.txt", "dnf5_updateinfo.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = NewDNF("dnf").ParseUpgradable(b) })
}

func FuzzParseZypper(f *testing.F) {
	addSeeds(f, "zypper_list_upgradable.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = Zypper{}.ParseUpgradable(b) })
}

func FuzzParsePacman(f *testing.F) {
	addSeeds(f, "pacman_local_desc.txt", "pacman_qu.txt")
	f.Add([]byte("%NAME%\nx\n%END%\n%VERSION%\n1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pkgs, _ := ParsePacmanLocalDB(b)
		for _, p := range pkgs {
			if p.Name == "" || p.Version == "" || p.Source == "" {
				t.Fatalf("incomplete record %+v", p)
			}
		}
		_, _ = ParsePacmanQu(b)
	})
}

func FuzzParseAPK(f *testing.F) {
	addSeeds(f, "apk_list_installed.txt", "apk_list_upgradable.txt", "apk_version.txt", "apk_info_v.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseAPKList(b)
		_, _ = ParseAPKListUpgradable(b)
		_, _ = ParseAPKVersion(b)
	})
}

func FuzzCompare(f *testing.F) {
	f.Add("1:1.0-1", "1.0~rc1^git")
	f.Add("1.2.4_git1-r4", "1.2.4-r4")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, cmp := range []func(string, string) int{CompareDeb, CompareRPM, CompareAPK} {
			if x, y := cmp(a, b), cmp(b, a); x != -y && !(x == 0 && y == 0) {
				// Antisymmetry must hold for every comparator.
				t.Fatalf("not antisymmetric: %q %q: %d %d", a, b, x, y)
			}
		}
	})
}

// BenchmarkParseDpkg1500 parses a 1,500-package inventory. Budget: 1,000
// servers × 1,500 packages ingested in ≤ 20 s end to end, so parsing must
// stay far below 20 ms per server.
func BenchmarkParseDpkg1500(b *testing.B) {
	rec := readTestdata(b, "apt_dpkg_query.txt")
	lines := bytes.SplitAfter(rec, []byte("\n"))
	var in []byte
	for i := 0; i < 1500; i++ {
		in = append(in, lines[i%(len(lines)-1)]...)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		pkgs, err := ParseDpkgQuery(in)
		if err != nil || len(pkgs) < 1400 {
			b.Fatal(len(pkgs), err)
		}
	}
}

// BenchmarkParseRPM1500 does the same for rpm -qa.
func BenchmarkParseRPM1500(b *testing.B) {
	rec := readTestdata(b, "dnf_rpm_qa.txt")
	lines := bytes.SplitAfter(rec, []byte("\n"))
	var in []byte
	for i := 0; i < 1500; i++ {
		in = append(in, lines[i%(len(lines)-1)]...)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRPMQuery(in, "dnf"); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseListsAge(f *testing.F) {
	addSeeds(f, "apt_lists_age.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseListsAge(b)
		if err == nil && a.Files > 0 && (a.Newest.Before(a.Oldest) || a.Newest.IsZero()) {
			t.Fatalf("newest %s before oldest %s", a.Newest, a.Oldest)
		}
	})
}
