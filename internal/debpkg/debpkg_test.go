package debpkg

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

func TestDebianVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.3.0-beta.2": "1.3.0~beta.2",
		"v1.2.3":       "1.2.3",
		"0.1.0":        "0.1.0",
		"2.0.0-beta.1": "2.0.0~beta.1",
	} {
		got, err := DebianVersion(in)
		if err != nil || got != want {
			t.Errorf("DebianVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1.2", "1.2.3-rc.1", "1.2.3~beta.1", "01.2.3", "1.2.3-beta.0"} {
		if got, err := DebianVersion(bad); err == nil {
			t.Errorf("DebianVersion(%q) = %q, want an error", bad, got)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Unavailable(t, "%s is not installed", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// fakeBin writes small executables in place of the real binaries: the
// contents test is about the package layout, not the programs.
func fakeBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []string{"lcm-api", "lcm-worker", "lcm-agent", "lcm-agent-linux-amd64", "lcm-helper-linux-amd64", "lcm-helper-linux-arm64"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\necho "+b+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuildPackageContents reads the built packages back with dpkg-deb:
// control fields, the Debian version form, maintainer scripts, and every
// file with its owner and mode.
func TestBuildPackageContents(t *testing.T) {
	need(t, "dpkg-deb")
	out := t.TempDir()
	pkgs, err := Build(Options{Repo: repoRoot(t), Bin: fakeBin(t), Out: out, Version: "1.4.0-beta.3", MTime: time.Unix(1_790_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != len(Names) {
		t.Fatalf("built %d packages, want %d", len(pkgs), len(Names))
	}
	want := map[string][]string{
		"lcm": {
			"-rwxr-xr-x root/root ./usr/lib/lcm/lcm-api",
			"-rwxr-xr-x root/root ./usr/lib/lcm/lcm-agent-linux-amd64",
			"-rwxr-xr-x root/root ./usr/lib/lcm/lcm-helper-linux-amd64",
			"-rwxr-xr-x root/root ./usr/lib/lcm/lcm-helper-linux-arm64",
			"-rw-r--r-- root/root ./lib/systemd/system/lcm-api.service",
			"-rw-r--r-- root/root ./usr/share/doc/lcm/install.md",
		},
		"lcm-worker": {
			"-rwxr-xr-x root/root ./usr/lib/lcm/lcm-worker",
			"-rwxr-xr-x root/root ./usr/lib/lcm-worker/lcm-helper-linux-amd64",
			"-rwxr-xr-x root/root ./usr/lib/lcm-worker/lcm-helper-linux-arm64",
			"-rw-r--r-- root/root ./lib/systemd/system/lcm-worker.service",
		},
		"lcm-agent": {
			"-rwxr-xr-x root/root ./usr/bin/lcm-agent",
			"-rw-r--r-- root/root ./lib/systemd/system/lcm-agent.service",
		},
	}
	for i, p := range pkgs {
		if p.Name != Names[i] || p.Version != "1.4.0~beta.3" {
			t.Errorf("package %d = %+v", i, p)
		}
		if base := filepath.Base(p.Path); base != p.Name+"_1.4.0~beta.3_amd64.deb" {
			t.Errorf("file name %s", base)
		}
		for field, v := range map[string]string{"Package": p.Name, "Version": "1.4.0~beta.3", "Architecture": "amd64", "Maintainer": DefaultMaintainer} {
			if got := strings.TrimSpace(run(t, "dpkg-deb", "-f", p.Path, field)); got != v {
				t.Errorf("%s: %s = %q, want %q", p.Name, field, got, v)
			}
		}
		listing := run(t, "dpkg-deb", "-c", p.Path)
		var lines []string
		for _, l := range strings.Split(listing, "\n") {
			if f := strings.Fields(l); len(f) >= 6 {
				lines = append(lines, f[0]+" "+f[1]+" "+f[len(f)-1])
			}
		}
		for _, w := range want[p.Name] {
			found := false
			for _, l := range lines {
				found = found || l == w
			}
			if !found {
				t.Errorf("%s lacks %q; has:\n%s", p.Name, w, strings.Join(lines, "\n"))
			}
		}
		ctl := t.TempDir()
		run(t, "dpkg-deb", "-e", p.Path, ctl)
		for _, s := range []string{"postinst", "prerm", "postrm"} {
			fi, err := os.Stat(filepath.Join(ctl, s))
			if err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: maintainer script %s: %v", p.Name, s, err)
			}
		}
	}
	if _, err := Build(Options{Repo: repoRoot(t), Bin: t.TempDir(), Out: out, Version: "1.0.0"}); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("missing binaries: %v", err)
	}
	if _, err := Build(Options{Repo: repoRoot(t), Bin: fakeBin(t), Out: out, Version: "1.0"}); err == nil {
		t.Error("a bad version was accepted")
	}
	if _, err := Build(Options{Repo: repoRoot(t), Bin: fakeBin(t), Out: out, Version: "1.0.0", Arch: "i386"}); err == nil {
		t.Error("an unsupported architecture was accepted")
	}
}

// TestDebianOrdering: the Debian form orders a pre-release before its
// release, as dpkg itself compares them.
func TestDebianOrdering(t *testing.T) {
	need(t, "dpkg")
	a, _ := DebianVersion("1.3.0-beta.2")
	b, _ := DebianVersion("1.3.0")
	if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
		t.Errorf("dpkg: %s is not before %s", a, b)
	}
}

// parseUnit reads a systemd unit into section → key → values.
func parseUnit(t *testing.T, name, text string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	sec := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			sec = line[1 : len(line)-1]
			out[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || sec == "" {
				t.Fatalf("%s: malformed line %q", name, line)
			}
			out[sec][k] = append(out[sec][k], v)
		}
	}
	for _, s := range []string{"Unit", "Service", "Install"} {
		if out[s] == nil {
			t.Fatalf("%s: no [%s] section", name, s)
		}
	}
	return out
}
