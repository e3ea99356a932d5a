package fleetsim_test

import (
	"bytes"
	"context"
	"errors"
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
		{"id -u", true, "", 0, "uid=0(root)"},
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
