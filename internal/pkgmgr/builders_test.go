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
	"github.com/lcmproject/lcm/internal/testutil"
)

// render lists every command a manager builds, one block per action, with
// the documented answer where the action is unsupported.
func render(m Manager) string {
	var b strings.Builder
	line := func(action, cmd string, err error) {
		if err != nil {
			cmd = "ERROR " + err.Error()
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", action, cmd)
	}
	names := []string{"openssl", "libssl3"}
	line("list-installed", m.ListInstalled(), nil)
	line("list-upgradable", m.ListUpgradable(), nil)
	if h, ok := m.(HoldLister); ok {
		line("list-held", h.ListHeld(), nil)
	}
	line("lists-age", m.ListsAge(), nil)
	line("refresh-lists", m.RefreshLists(), nil)
	line("upgrade-all", m.UpgradeAll(), nil)
	c, err := m.UpgradeSecurity()
	line("upgrade-security", c, err)
	c, err = m.Update(names...)
	line("update", c, err)
	c, err = m.Remove(names...)
	line("remove", c, err)
	c, err = m.Autoremove()
	line("autoremove", c, err)
	c, err = m.KernelCleanup()
	line("kernel-cleanup", c, err)
	c, err = m.Hold(names...)
	line("hold", c, err)
	c, err = m.Unhold(names...)
	line("unhold", c, err)
	return b.String()
}

func TestBuildersGolden(t *testing.T) {
	managers := []Manager{APT{}, NewDNF("dnf"), NewDNF("yum"), Zypper{}, Pacman{}, APK{}}
	for _, m := range managers {
		t.Run(m.Name(), func(t *testing.T) {
			golden(t, "commands_"+m.Name()+".golden", render(m))
		})
	}
}

// TestCommandsParse checks every built command is valid sh syntax.
func TestCommandsParse(t *testing.T) {
	sh := testutil.RequireTool(t, "sh")
	for _, m := range []Manager{APT{}, NewDNF("dnf"), NewDNF("yum"), Zypper{}, Pacman{}, APK{}} {
		for _, block := range strings.Split(render(m), "## ")[1:] {
			_, cmd, _ := strings.Cut(block, "\n")
			cmd = strings.TrimSpace(cmd)
			if strings.HasPrefix(cmd, "ERROR ") {
				continue
			}
			out, err := exec.Command(sh, "-n", "-c", cmd).CombinedOutput()
			require.NoError(t, err, "%s: %s\n%s", m.Name(), cmd, out)
			if strings.HasPrefix(cmd, "sh -c ") {
				// The inner script must parse too: unquote it through the shell.
				inner, err := exec.Command(sh, "-c", "printf %s "+strings.TrimPrefix(cmd, "sh -c ")).Output()
				require.NoError(t, err)
				out, err := exec.Command(sh, "-n", "-c", string(inner)).CombinedOutput()
				require.NoError(t, err, "%s inner: %s\n%s", m.Name(), inner, out)
			}
		}
	}
}

func TestPrivilegedCommandsUseSudoN(t *testing.T) {
	for _, m := range []Manager{APT{}, NewDNF("dnf"), NewDNF("yum"), Zypper{}, Pacman{}, APK{}} {
		for _, cmd := range []string{m.RefreshLists(), m.UpgradeAll()} {
			// A script's privileged steps carry the prefix themselves.
			require.True(t, strings.HasPrefix(cmd, "sudo -n ") || strings.HasPrefix(cmd, "sh -c ") && strings.Contains(cmd, "sudo -n "), cmd)
		}
		require.NotContains(t, m.ListsAge(), "sudo", "the lists age is read without privileges")
	}
	require.Contains(t, APT{}.UpgradeAll(), "DEBIAN_FRONTEND=noninteractive")
	require.Contains(t, APT{}.UpgradeAll(), "-o DPkg::Lock::Timeout=120")
	require.Contains(t, APT{}.UpgradeAll(), "-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold -y")
}

func TestNameValidation(t *testing.T) {
	bad := []string{"", "-rf", "--purge", "a;b", "a b", "a$(id)", "a`id`", "a|b", "a&b", "a>b",
		"a\nb", "a'b", `a"b`, "a\\b", "*", "a*", "~root", "a\x00b", strings.Repeat("a", 201)}
	managers := []Manager{APT{}, NewDNF("dnf"), Zypper{}, APK{}, Pacman{}}
	for _, m := range managers {
		for _, n := range bad {
			for name, build := range map[string]func(...string) (string, error){
				"update": m.Update, "remove": m.Remove, "hold": m.Hold, "unhold": m.Unhold,
			} {
				_, err := build(n)
				require.ErrorIs(t, err, domain.ErrInvalid, "%s %s %q", m.Name(), name, n)
				var ue *UnsupportedError
				require.False(t, errors.As(err, &ue), "%s %s %q: name must be rejected before the answer", m.Name(), name, n)
			}
		}
		_, err := m.Remove()
		require.ErrorIs(t, err, domain.ErrInvalid)
	}
	good := map[Manager][]string{
		APT{}:         {"libstdc++6", "g++-12", "libc6:i386", "python3.11"},
		NewDNF("dnf"): {"libstdc++", "python3-dnf-plugin-versionlock", "NetworkManager", "kernel-core"},
		Zypper{}:      {"libopenssl3", "openssl-3", "MozillaFirefox"},
		APK{}:         {"libstdc++", "py3-pip", "openssh-server"},
		Pacman{}:      {"libstdc++5", "python-pip", "lib32-glibc"},
	}
	for m, names := range good {
		_, err := m.Remove(names...)
		require.NoError(t, err, m.Name())
	}
	_, err := APT{}.Remove("Foo") // Debian names are lower case
	require.ErrorIs(t, err, domain.ErrInvalid)
}

func TestUnsupportedAnswers(t *testing.T) {
	for _, m := range []Manager{Pacman{}, APK{}} {
		_, err := m.UpgradeSecurity()
		require.ErrorIs(t, err, ErrNoSecurityChannel)
		require.ErrorIs(t, err, ErrUnsupported)
		require.ErrorIs(t, err, domain.ErrInvalid)
		require.Contains(t, err.Error(), "no security channel")
	}
	_, err := Zypper{}.Autoremove()
	require.ErrorIs(t, err, ErrUnsupported)
	require.NotErrorIs(t, err, ErrNoSecurityChannel)
}

func TestNew(t *testing.T) {
	for _, f := range []Family{FamilyAPT, FamilyDNF, FamilyZypper, FamilyPacman, FamilyAPK} {
		m, err := New(f)
		require.NoError(t, err)
		require.Equal(t, f, m.Family())
	}
	_, err := New("portage")
	require.ErrorIs(t, err, domain.ErrInvalid)
}

// TestAptSecurityFilterAgrees runs the awk program UpgradeSecurity ships
// over the recorded simulation and checks it selects exactly the packages
// ParseAptSimulate flags as security updates.
func TestAptSecurityFilterAgrees(t *testing.T) {
	awk := testutil.RequireTool(t, "awk")
	inputs := []string{
		string(readTestdata(t, "apt_simulate_dist_upgrade.txt")),
		"Inst a [1] (2 Ubuntu:22.04/jammy-security [amd64])\n" +
			"Inst b [1] (2 Debian-Security:10/oldoldstable [amd64])\n" +
			"Inst c [1] (2 my-security-tools:1/stable-securityish [all])\n" +
			"Inst d (2 Debian-Security:12/stable-security [amd64])\n" +
			"Inst e [1+security] (2+security Debian:12/stable [amd64])\n",
	}
	for _, in := range inputs {
		cmd := exec.Command(awk, aptSecurityFilter)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		require.NoError(t, err)
		ups, err := ParseAptSimulate([]byte(in))
		require.NoError(t, err)
		var want []string
		for _, u := range ups {
			if u.Security {
				want = append(want, u.Name)
			}
		}
		require.Equal(t, want, strings.Fields(string(out)))
	}
}

// TestRefreshListsPerFamily: the refresh that runs before every action
// that decides what to install really refreshes (dnf ignores metadata
// younger than metadata_expire without --refresh, yum without expiring
// its cache first), fails on any broken source (apt exits 0 on a failed
// source without Error-Mode=any), and pacman never syncs the system's
// databases without the upgrade.
func TestRefreshListsPerFamily(t *testing.T) {
	require.Contains(t, APT{}.RefreshLists(), "-o APT::Update::Error-Mode=any update")
	require.Contains(t, NewDNF("dnf").RefreshLists(), "dnf -y makecache --refresh")
	require.Contains(t, NewDNF("yum").RefreshLists(), "yum -q clean expire-cache")
	require.Contains(t, NewDNF("yum").RefreshLists(), "yum -y makecache fast")
	require.Contains(t, Zypper{}.RefreshLists(), "zypper --non-interactive refresh")
	require.Contains(t, APK{}.RefreshLists(), "apk --wait 120 update")
	pr := Pacman{}.RefreshLists()
	for _, line := range strings.Split(pr, "\n") {
		if strings.Contains(line, "pacman --noconfirm -Sy") {
			require.Contains(t, line, `--dbpath "$tmp"`, "pacman -Sy on the system's databases: %s", line)
		}
	}
	require.Contains(t, pr, `-Sy --dbpath "$tmp"`)
	require.Equal(t, "sudo -n pacman --noconfirm -Syu", Pacman{}.UpgradeAll(), "pacman refreshes and upgrades together")
	require.Contains(t, Pacman{}.ListUpgradable(), `pacman -Qu --dbpath "$tmp"`)
}

// TestPacmanPrivateDBRefresh runs the pacman refresh script locally with a
// fake pacman and pacman-conf on PATH: the private copy is seeded from the
// system's sync databases, the local database is linked, and the sync runs
// on the private copy only.
func TestPacmanPrivateDBRefresh(t *testing.T) {
	sh := testutil.RequireTool(t, "sh")
	dir := t.TempDir()
	sys := filepath.Join(dir, "var", "lib", "pacman")
	require.NoError(t, os.MkdirAll(filepath.Join(sys, "sync"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(sys, "local"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sys, "sync", "core.db"), []byte("core"), 0o644))
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	log := filepath.Join(dir, "calls")
	for name, body := range map[string]string{
		"pacman-conf": "echo " + sys + "/",
		"sudo":        `[ "$1" = -n ] && shift; echo "$*" >> ` + log + `; exit 0`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	cmd := exec.Command(sh, "-c", Pacman{}.RefreshLists())
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	priv := filepath.Join(dir, "cache", "lcm", "pacman-db")
	b, err := os.ReadFile(filepath.Join(priv, "sync", "core.db"))
	require.NoError(t, err)
	require.Equal(t, "core", string(b))
	target, err := os.Readlink(filepath.Join(priv, "local"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(sys, "local"), target)
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "pacman --noconfirm -Sy --dbpath "+priv+" --logfile /dev/null\n", string(calls))
}

// TestListsAgeScript runs a family's lists-age command shape locally over
// index files with known mtimes and parses it.
func TestListsAgeScript(t *testing.T) {
	sh := testutil.RequireTool(t, "sh")
	if _, err := exec.LookPath("stat"); err != nil {
		t.Skip("no stat")
	}
	dir := t.TempDir()
	old := time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Second)
	newer := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	for name, mt := range map[string]time.Time{
		"deb.debian.org_debian_dists_bookworm_InRelease":                   old,
		"deb.debian.org_debian-security_dists_bookworm-security_InRelease": newer,
		"deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages":  time.Now(),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chtimes(p, mt, mt))
	}
	out, err := exec.Command(sh, "-c", listsAgeScript(dir+"/*Release", dir+"/nothing/*.db")).Output()
	require.NoError(t, err)
	a, err := ParseListsAge(out)
	require.NoError(t, err)
	require.Equal(t, 2, a.Files)
	require.True(t, a.Newest.Equal(newer), "newest %s want %s", a.Newest, newer)
	require.True(t, a.Oldest.Equal(old))
	require.InDelta(t, 3*time.Hour, a.Age(), float64(time.Minute))

	out, err = exec.Command(sh, "-c", listsAgeScript(dir+"/none/*Release")).Output()
	require.NoError(t, err)
	a, err = ParseListsAge(out)
	require.NoError(t, err)
	require.Zero(t, a.Files)
	require.Zero(t, a.Age())
}

func TestParseListsAge(t *testing.T) {
	a, err := ParseListsAge([]byte("1764000000\n1763000000\n1763900000\n"))
	require.NoError(t, err)
	require.Equal(t, ListsAge{Now: time.Unix(1764000000, 0).UTC(), Newest: time.Unix(1763900000, 0).UTC(), Oldest: time.Unix(1763000000, 0).UTC(), Files: 2}, a)
	require.Equal(t, 100000*time.Second, a.Age())
	for _, bad := range []string{"", "\n", "now\n", "1764000000\nstat: cannot stat\n", "-5\n"} {
		_, err := ParseListsAge([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestHumanAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 42 * time.Second: "42s", 17*time.Minute + 5*time.Second: "17m",
		5*time.Hour + 12*time.Minute: "5h 12m", 76 * time.Hour: "3d 4h",
	} {
		require.Equal(t, want, HumanAge(d))
	}
}
