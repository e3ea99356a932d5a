package pkgmgr

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

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
	for _, m := range []Manager{APT{}, NewDNF("dnf"), Zypper{}, Pacman{}, APK{}} {
		for _, cmd := range []string{m.RefreshLists(), m.UpgradeAll()} {
			require.True(t, strings.HasPrefix(cmd, "sudo -n "), cmd)
		}
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
