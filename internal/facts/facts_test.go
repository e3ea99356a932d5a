package facts

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			out, err := os.ReadFile(in)
			require.NoError(t, err)
			f, err := Parse(out)
			require.NoError(t, err)
			got, err := json.MarshalIndent(f, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			gold := strings.TrimSuffix(in, ".txt") + ".golden.json"
			if *update {
				require.NoError(t, os.WriteFile(gold, got, 0o644))
				return
			}
			want, err := os.ReadFile(gold)
			require.NoError(t, err, "run go test -update")
			require.Equal(t, string(want), string(got))
		})
	}
}

func parseFile(t *testing.T, name string) Facts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	f, err := Parse(b)
	require.NoError(t, err)
	return f
}

func TestParseRecordedDebian(t *testing.T) {
	f := parseFile(t, "debian12_container.txt")
	require.Equal(t, "debian", f.OS.ID)
	require.Equal(t, "12", f.OS.VersionID)
	require.Equal(t, "bookworm", f.OS.Codename)
	require.Equal(t, "apt", f.PackageManager)
	require.Equal(t, Virtualization{Role: RoleContainer, Type: "docker", Source: "systemd-detect-virt"}, f.Virtualization)
	require.Positive(t, f.Memory.TotalBytes)
	require.Positive(t, f.CPU.Threads)
	require.NotEmpty(t, f.Filesystems)
	require.NotEmpty(t, f.Addresses)
	require.False(t, f.Reboot.Required)
	require.Empty(t, f.Warnings)
}

func TestParseRHEL(t *testing.T) {
	f := parseFile(t, "rhel9_vm.txt")
	require.Equal(t, []string{"fedora"}, f.OS.IDLike)
	require.Equal(t, "dnf", f.PackageManager)
	require.Equal(t, RoleVM, f.Virtualization.Role)
	require.Equal(t, Reboot{Required: true, Reason: ReasonNeedsRestart}, f.Reboot)
	require.Equal(t, int64(864123), f.UptimeSeconds)
	require.Equal(t, CPU{Model: "Intel Xeon Processor (Icelake)", Sockets: 1, Cores: 2, Threads: 2}, f.CPU)
	require.Equal(t, uint64(3735552*1024), f.Memory.TotalBytes)
	var network []string
	for _, fs := range f.Filesystems {
		if fs.Network {
			network = append(network, fs.MountPoint)
		}
	}
	require.Equal(t, []string{"/srv/data share", "/mnt/backup"}, network)
	require.Equal(t, "/srv/data share", f.Mounts[2].MountPoint)
	require.True(t, f.Mounts[1].ReadOnly)
	require.Equal(t, "br-int", f.Addresses[2].Interface)
	require.Len(t, f.Warnings, 1, f.Warnings) // the login banner
}

func TestParseAlpineFallbacks(t *testing.T) {
	f := parseFile(t, "alpine_minimal.txt")
	require.Equal(t, "apk", f.PackageManager)
	require.Equal(t, Virtualization{Role: RoleVM, Source: "cpuinfo-hypervisor-flag"}, f.Virtualization)
	require.Equal(t, Reboot{Required: true, Reason: ReasonKernelRemoved, NewestKernel: "6.6.22-0-virt"}, f.Reboot)
	require.Equal(t, uint64(110000*1024+600000*1024), f.Memory.AvailableBytes)
	require.Equal(t, "ext4", f.Filesystems[0].Type) // from /proc/mounts
	addrs := map[string]Address{}
	for _, a := range f.Addresses {
		addrs[a.Address] = a
	}
	require.Len(t, addrs, 3)
	require.Equal(t, 64, addrs["2001:db8::42"].PrefixLen)
	require.Equal(t, "link", addrs["fe80::5054:ff:fe12:3456"].Scope)
	require.Equal(t, -1, addrs["10.1.2.3"].PrefixLen)
}

func TestParseGarbage(t *testing.T) {
	f := parseFile(t, "truncated_garbage.txt")
	require.Equal(t, "ubuntu", f.OS.ID)
	require.Equal(t, "apt", f.PackageManager)
	require.True(t, f.Reboot.Required)
	require.Equal(t, []string{"linux-image-5.15.0-106-generic"}, f.Reboot.Packages)
	require.Zero(t, f.UptimeSeconds)
	require.Empty(t, f.Filesystems)
	require.Empty(t, f.Addresses)
	joined := strings.Join(f.Warnings, "\n")
	for _, w := range []string{"truncated", "uptime", "meminfo", "df line", "ip-addr", `section "virt" missing`} {
		require.Contains(t, joined, w)
	}

	_, err := Parse([]byte("Permission denied (publickey).\n"))
	require.ErrorIs(t, err, domain.ErrInvalid)
	_, err = Parse(nil)
	require.ErrorIs(t, err, domain.ErrInvalid)
}

// TestScriptRunsHere runs the real collector under every POSIX shell found
// on this machine and parses the result.
func TestScriptRunsHere(t *testing.T) {
	ran := 0
	for _, sh := range []string{"sh", "dash", "bash", "busybox"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		args := []string{"-c", Script()}
		if sh == "busybox" {
			args = append([]string{"sh"}, args...)
		}
		out, err := exec.Command(path, args...).Output()
		require.NoError(t, err, sh)
		f, err := Parse(out)
		require.NoError(t, err, sh)
		require.NotEmpty(t, f.OS.ID, sh)
		require.NotEmpty(t, f.Kernel, sh)
		require.NotEmpty(t, f.Hostname, sh)
		require.Positive(t, f.UptimeSeconds, sh)
		require.Positive(t, f.Memory.TotalBytes, sh)
		require.Positive(t, f.CPU.Threads, sh)
		require.NotEmpty(t, f.PackageManager, sh)
		require.Empty(t, f.Warnings, sh)
		ran++
	}
	if ran == 0 {
		testutil.Unavailable(t, "no POSIX shell")
	}
}

func TestScriptIsReadOnly(t *testing.T) {
	s := Script()
	for _, bad := range []string{"sudo", "rm ", "> /", ">/etc", "apt-get install", "dnf -y", "zypper --non", "pacman -S"} {
		require.NotContains(t, s, bad)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, in := range files {
		b, err := os.ReadFile(in)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("==lcm:section ===="))
	f.Add([]byte("==lcm:section cpuinfo==\nprocessor: x\ncpu cores: 99999999999999999999\n"))
	f.Add([]byte("==lcm:section if-inet6==\nzz 1 ff ff 0 eth0\n==lcm:section mounts==\n\\ \\0 x y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		facts, err := Parse(b)
		if err != nil {
			return
		}
		if facts.CPU.Cores < 0 || facts.CPU.Threads < 0 {
			t.Fatalf("negative counts %+v", facts.CPU)
		}
	})
}
