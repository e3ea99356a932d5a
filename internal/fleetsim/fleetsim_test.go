package fleetsim_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

func start(t *testing.T, cfg fleetsim.Config) *fleetsim.Fleet {
	t.Helper()
	f, err := fleetsim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func client(t *testing.T, inst *fleetsim.Instance) *sshexec.Client {
	t.Helper()
	c, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDeterministicHostKeys(t *testing.T) {
	a := start(t, fleetsim.Config{N: 2, Seed: 42})
	b := start(t, fleetsim.Config{N: 2, Seed: 42})
	if a.Instances[1].Fingerprint != b.Instances[1].Fingerprint || a.Instances[0].Fingerprint == a.Instances[1].Fingerprint {
		t.Fatal("host keys are not deterministic per seed and index")
	}
}

func TestResponders(t *testing.T) {
	f := start(t, fleetsim.Config{N: 1, Packages: 3, OutputBytes: 4000})
	c := client(t, f.Instances[0])
	tests := []struct {
		cmd      string
		sudo     bool
		stdin    string
		code     int
		contains string
	}{
		{"hostname", false, "", 0, "sim-0000\n"},
		{"uname -r", false, "", 0, "6.1.0-31-amd64\n"},
		{"cat /etc/os-release", false, "", 0, "VERSION_CODENAME=bookworm"},
		{"true", true, "", 0, ""},
		{"id -u", true, "", 0, "0\n"},
		{"id", true, "", 0, "uid=0(root) gid=0(root) groups=0(root)\n"},
		{"id -un && sudo -n true && echo ok", false, "", 0, "lcm\nok\n"},
		{"false || echo fallback", false, "", 0, "fallback\n"},
		{"false && echo never", false, "", 1, ""},
		{"sudo -n cat /etc/sudoers.d/lcm", false, "", 0, "lcm ALL=(ALL:ALL) NOPASSWD: ALL\n"},
		{`dpkg-query -W -f '${Package} ${Version}\n'`, false, "", 0, "apt 1.1.1-1+deb12u1\n"},
		{"apt-get -y upgrade", true, "", 0, "Setting up "},
		{"cat", false, "piped\n", 0, "piped\n"},
		{"echo 'hi there'", false, "", 0, "hi there\n"},
		{"some-unknown --flag", false, "", 0, "some-unknown --flag\n"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			var out bytes.Buffer
			cmd := remote.Command{Cmd: tt.cmd, Sudo: tt.sudo, Stdout: &out}
			if tt.stdin != "" {
				cmd.Stdin = strings.NewReader(tt.stdin)
			}
			res, err := c.Run(context.Background(), cmd)
			if err != nil || res.ExitCode != tt.code || !strings.Contains(out.String(), tt.contains) {
				t.Fatalf("%v code %d out %q", err, res.ExitCode, out.String())
			}
		})
	}
}

func TestAptFailure(t *testing.T) {
	f := start(t, fleetsim.Config{N: 1, FailRate: 1})
	var errb bytes.Buffer
	res, err := client(t, f.Instances[0]).Run(context.Background(), remote.Command{Cmd: "apt-get -y upgrade", Sudo: true, Stderr: &errb})
	if err != nil || res.ExitCode != 100 || !strings.HasPrefix(errb.String(), "E: ") {
		t.Fatalf("%v code %d stderr %q", err, res.ExitCode, errb.String())
	}
}

func TestCustomResponderAndAbort(t *testing.T) {
	table := fleetsim.DefaultTable()
	table.Handle("lcm-facts", func(ctx context.Context, r *fleetsim.Request) int {
		_, _ = r.Stdout.Write([]byte("os=debian\n"))
		return 0
	})
	f := start(t, fleetsim.Config{N: 1, Responders: table})
	c := client(t, f.Instances[0])
	var out bytes.Buffer
	if _, err := c.Run(context.Background(), remote.Command{Cmd: "lcm-facts", Stdout: &out}); err != nil || out.String() != "os=debian\n" {
		t.Fatalf("%v %q", err, out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Run(ctx, remote.Command{Cmd: "sleep 100"}); !errors.Is(err, remote.ErrAborted) {
		t.Fatalf("err %v", err)
	}
}

// TestPinnedListRefresh: a test's catch-all for apt-get, registered after
// the defaults, keeps answering the upgrade only; the list age and the list
// refresh that precede every upgrade keep the pinned default answers, and a
// later Pin overrides those.
func TestPinnedListRefresh(t *testing.T) {
	table := fleetsim.DefaultTable()
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		_, _ = io.WriteString(r.Stdout, "catch-all\n")
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := client(t, f.Instances[0])
	runOut := func(cmd string) (string, int) {
		var out bytes.Buffer
		res, err := c.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), res.ExitCode
	}
	if out, _ := runOut("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o APT::Update::Error-Mode=any update"); !strings.HasPrefix(out, "Hit:1 ") {
		t.Fatalf("list refresh answered %q", out)
	}
	if out, _ := runOut("date +%s; stat -c %Y -- /var/lib/apt/lists/*Release 2>/dev/null; exit 0"); strings.Count(out, "\n") != 3 {
		t.Fatalf("lists age answered %q", out)
	}
	if out, _ := runOut("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade"); out != "catch-all\n" {
		t.Fatalf("upgrade answered %q", out)
	}
	table.Pin(fleetsim.IsListRefresh, func(ctx context.Context, r *fleetsim.Request) int { return 100 })
	if _, code := runOut("sudo -n apt-get update"); code != 100 {
		t.Fatalf("overriding pin: exit %d", code)
	}
}
