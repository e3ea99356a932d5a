package selfreg_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/selfreg"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// netnsEnv carries the sshd host key's public half into the re-executed
// test binary; only there does TestSelfregInNamespace run.
const netnsEnv = "LCM_SELFREG_NETNS_HOSTKEY"

// TestSelfregNamespace starts a real sshd on 127.0.0.1:22 inside a fresh
// network namespace and re-executes this test binary there.
func TestSelfregNamespace(t *testing.T) {
	testutil.RequireRoot(t)
	unshare := testutil.RequireTool(t, "unshare")
	testutil.RequireTool(t, "ip")
	keygen := testutil.RequireTool(t, "ssh-keygen")
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		testutil.Unavailable(t, "%s missing", sshd)
	}
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "hostkey")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte("UsePAM no\nPasswordAuthentication no\nPermitRootLogin no\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "sshd.pid")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "ip link set lo up && " + sshd + " -f " + cfg + " -o ListenAddress=127.0.0.1:22 -o PidFile=" + pidFile +
		" -h " + hostKey + " && exec " + bin + " -test.run=^TestSelfregInNamespace$ -test.v -test.count=1"
	cmd := exec.Command(unshare, "--net", "--fork", "sh", "-c", script)
	cmd.Env = append(os.Environ(), netnsEnv+"="+hostKey+".pub", "LCM_SELFREG_SSHD_PID="+pidFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if b, rerr := os.ReadFile(pidFile); rerr == nil { // sshd outlives the inner test otherwise
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	t.Logf("namespace run:\n%s", out.String())
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestSelfregInNamespace") {
		t.Fatalf("inner test failed: %v", err)
	}
}

// TestSelfregInNamespace is the re-executed half of TestSelfregNamespace.
func TestSelfregInNamespace(t *testing.T) {
	pubPath := os.Getenv(netnsEnv)
	if pubPath == "" {
		t.Skip("runs only inside TestSelfregNamespace's network namespace")
	}
	pubLine, err := os.ReadFile(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _, _, err := ssh.ParseAuthorizedKey(pubLine)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	notContainer := func() bool { return false } // the test host itself may be one
	noEnv := func(string) string { return "" }

	t.Run("reachable pins the real host key", func(t *testing.T) {
		p := plane.Start(t, plane.Options{NoWorker: true})
		dir := t.TempDir()
		writeKey(t, dir)
		d, err := selfreg.Run(ctx, selfreg.Deps{Store: p.Store, Fleet: p.Fleet, DataDir: dir, Getenv: noEnv, InContainer: notContainer})
		if err != nil || !d.Register {
			t.Fatalf("Run = %+v, %v", d, err)
		}
		srvs, _ := p.Store.ListServers(ctx, store.ScopeOf(p.Admin), store.ServerFilter{})
		if len(srvs) != 1 || srvs[0].HostKeyFingerprint != ssh.FingerprintSHA256(want) {
			t.Fatalf("servers %+v, want one pinned to %s", srvs, ssh.FingerprintSHA256(want))
		}
		writeKey(t, dir)
		if d, _ := selfreg.Run(ctx, selfreg.Deps{Store: p.Store, Fleet: p.Fleet, DataDir: dir, Getenv: noEnv, InContainer: notContainer}); d.Register {
			t.Fatalf("registered twice: %+v", d)
		}
	})
	t.Run("already registered at 127.0.0.1:22 no duplicate", func(t *testing.T) {
		p := plane.Start(t, plane.Options{NoWorker: true})
		if _, err := p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "this-box", Host: "127.0.0.1",
			Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey,
			Joined: true, HostKey: strings.TrimSpace(string(pubLine)), HostKeyFingerprint: ssh.FingerprintSHA256(want)}}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeKey(t, dir)
		d, err := selfreg.Run(ctx, selfreg.Deps{Store: p.Store, Fleet: p.Fleet, DataDir: dir, Getenv: noEnv, InContainer: notContainer})
		if err != nil || d.Register {
			t.Fatalf("Run = %+v, %v", d, err)
		}
		srvs, _ := p.Store.ListServers(ctx, store.ScopeOf(p.Admin), store.ServerFilter{})
		if len(srvs) != 1 {
			t.Fatalf("%d servers, want 1", len(srvs))
		}
		if _, err := os.Stat(filepath.Join(dir, selfreg.HandoverFile)); !os.IsNotExist(err) {
			t.Fatal("handover file not deleted")
		}
	})
}

func writeKey(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, selfreg.HandoverFile), []byte(privateKeyPEM(t)), 0o600); err != nil {
		t.Fatal(err)
	}
}
